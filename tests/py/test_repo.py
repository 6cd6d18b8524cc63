"""test_repo.py — the repository stands alone.

Someone who clones kiln has only the repository, so:
- no tracked file points outside it (a path through ../shared or a "design guide"
  kept elsewhere);
- ARCHITECTURE.md exists, names every top-level source folder (each stage's home),
  and every folder or file it cites in backquotes (`tir/tir.h`, `runtime/`) exists;
- the README starts with its two commands (set-up + main job, set-up + all tests)
  and points to ARCHITECTURE.md.

Closing line: test_repo: N passed, M failed.
"""
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SOURCE_FOLDERS = ["graphir", "importer", "layout", "fusion", "te", "tir", "schedule", "lower", "targets", "pack", "runtime", "cli"]
TEXT = (".c", ".h", ".md", ".py", ".sh", ".txt", ".cmake", ".def")


def tracked_files():
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True)
    if out.returncode != 0:  # not a git checkout (an exported tree): every file below the root
        return [os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(ROOT) for f in fs
                if "/." not in d and "/build" not in d]
    return out.stdout.split()


def main():
    util.parse_args(__doc__)
    c = util.Checks("test_repo")
    outside = re.compile(r"\.\./shared|shared/design\.md|the design guide|design notes")
    for rel in tracked_files():
        if not rel.endswith(TEXT) and os.path.basename(rel) not in ("Makefile", "CMakeLists.txt"):
            continue
        if rel == "tests/py/test_repo.py":
            continue
        try:
            with open(os.path.join(ROOT, rel), encoding="utf-8", errors="replace") as f:
                for no, line in enumerate(f, 1):
                    if outside.search(line):
                        c.check(False, "%s:%d points outside the repository: %s" % (rel, no, line.strip()[:120]))
        except OSError as e:
            c.check(False, "%s: %s" % (rel, e))
    c.check(True, "no file points outside the repository")

    arch = os.path.join(ROOT, "ARCHITECTURE.md")
    if c.check(os.path.isfile(arch), "ARCHITECTURE.md exists"):
        text = open(arch, encoding="utf-8").read()
        for folder in SOURCE_FOLDERS:
            c.check(folder + "/" in text, "ARCHITECTURE.md names the folder %s/" % folder)
        for cited in sorted(set(re.findall(r"`([A-Za-z0-9_./-]+/[A-Za-z0-9_./-]*)`", text))):
            path = cited.split(":")[0]
            if path.startswith(("http", "/")) or "*" in path or "<" in path:
                continue
            c.check(os.path.exists(os.path.join(ROOT, path)), "ARCHITECTURE.md cites `%s`, which does not exist" % cited)

    readme = open(os.path.join(ROOT, "README.md"), encoding="utf-8").read()
    first = readme[:1500]
    c.check("make run" in first and "make test" in first, "README starts with the two commands (make run, make test)")
    c.check("ARCHITECTURE.md" in readme, "README points to ARCHITECTURE.md")
    c.finish()


if __name__ == "__main__":
    main()
