"""test_inspect_svg.py — `kiln inspect --fused --svg FILE`: the fused graph rendered
by Graphviz's dot.

On a small model (Conv → Relu → GlobalAveragePool → Flatten → Gemm):
- with dot on PATH (scripts/packages.txt names graphviz, so setup installs it; its
  absence fails here, it is not skipped): exit 0 and FILE is SVG (it starts with
  <?xml or <svg, parses as XML with an <svg> root) holding every fused group's label
  and the graph's input and output names; with --dot too, the same drawing: every
  label of the DOT file is in the SVG;
- with a PATH that has no dot: exit 1, one line that says to install Debian's graphviz
  (apt-get install graphviz) or use --dot, and no FILE left behind;
- with a dot that fails (a stand-in that exits 3): exit 1, one line with its exit
  status, no FILE left behind;
- an unwritable FILE: exit 1, one line naming it.

Closing line: test_inspect_svg: N passed, M failed.
"""
import os
import re
import shutil
import stat
import sys
import tempfile
import xml.etree.ElementTree as ET

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import util  # noqa: E402


def model(path):
    rng = np.random.default_rng(5)
    inits = [numpy_helper.from_array(rng.standard_normal((8, 3, 3, 3)).astype(np.float32), "w"),
             numpy_helper.from_array(rng.standard_normal((10, 8)).astype(np.float32), "g")]
    nodes = [helper.make_node("Conv", ["pixels", "w"], ["c"], pads=[1, 1, 1, 1]), helper.make_node("Relu", ["c"], ["r"]),
             helper.make_node("GlobalAveragePool", ["r"], ["p"]), helper.make_node("Flatten", ["p"], ["f"]),
             helper.make_node("Gemm", ["f", "g"], ["scores"], transB=1)]
    g = helper.make_graph(nodes, "svg", [helper.make_tensor_value_info("pixels", TensorProto.FLOAT, [1, 3, 16, 16])],
                          [helper.make_tensor_value_info("scores", TensorProto.FLOAT, [1, 10])], inits)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.save(m, path)


def run_env(kiln, args, path_value):
    """kiln with PATH set to path_value (nothing else changed)."""
    import subprocess
    env = dict(os.environ, PATH=path_value)
    p = subprocess.run([kiln] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       stdin=subprocess.DEVNULL, timeout=120)
    return p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace")


def one_line(err):
    lines = [l for l in err.splitlines() if l.strip()]
    return lines[0] if len(lines) == 1 else None


def main():
    args = util.parse_args(__doc__)
    c = util.Checks("test_inspect_svg")
    kiln = os.path.abspath(args.kiln)
    tmp = tempfile.mkdtemp(prefix="kiln-svg-")
    try:
        onnx_path = os.path.join(tmp, "m.onnx")
        model(onnx_path)
        svg, dot = os.path.join(tmp, "g.svg"), os.path.join(tmp, "g.dot")
        if c.check(shutil.which("dot") is not None,
                   "Graphviz's dot is on PATH (scripts/setup.sh installs graphviz from scripts/packages.txt)"):
            r = util.run_kiln(kiln, ["inspect", onnx_path, "--fused", "--svg", svg, "--dot", dot])
            groups = re.findall(r"^\s+(\d+)\s+\S+\s+(\S+)\s+(\d+)\s", r.out, re.M)
            if c.check(r.rc == 0 and os.path.isfile(svg) and not r.sanitizer_report(),
                       "inspect --fused --svg: %s %s" % (r.describe(), r.err[-500:])):
                text = open(svg, encoding="utf-8").read()
                c.check(text.lstrip().startswith(("<?xml", "<svg")), "the file starts as SVG: %r" % text[:60])
                try:
                    root = ET.fromstring(text)
                    c.check(root.tag.endswith("svg"), "the root element is <svg>: %s" % root.tag)
                except ET.ParseError as e:
                    c.check(False, "the SVG parses as XML: %s" % e)
                shown = set(re.findall(r"<text[^>]*>([^<]*)</text>", text))
                c.check(len(groups) >= 2, "inspect --fused lists the groups: %r" % r.out[-500:])
                labels = ["g%s %s (%s)" % g for g in groups]
                c.check(all(l in shown for l in labels), "every fused group's label is drawn: %s" % labels)
                c.check({"pixels", "scores"} <= shown, "the input and output are drawn")
                dot_labels = set(re.findall(r'label="([^"]*)"', open(dot, encoding="utf-8").read()))
                c.check(dot_labels and all(part in shown for l in dot_labels for part in l.split("\\n")),
                        "every label of the --dot file is in the SVG")
        # no dot on PATH
        empty = os.path.join(tmp, "empty-bin")
        os.makedirs(empty)
        nosvg = os.path.join(tmp, "none.svg")
        rc, out, err = run_env(kiln, ["inspect", onnx_path, "--fused", "--svg", nosvg], empty)
        line = one_line(err)
        c.check(rc == 1 and line and "graphviz" in line and "apt-get install graphviz" in line and "--dot" in line,
                "without dot: exit 1 and one line naming graphviz and --dot: exit %d, %r" % (rc, err))
        c.check(not os.path.exists(nosvg), "without dot: no file left behind")
        # a dot that fails
        fake = os.path.join(tmp, "fake-bin")
        os.makedirs(fake)
        with open(os.path.join(fake, "dot"), "w") as f:
            f.write("#!/bin/sh\ncat >/dev/null\necho 'dot: syntax error' >&2\nexit 3\n")
        os.chmod(os.path.join(fake, "dot"), stat.S_IRWXU)
        rc, out, err = run_env(kiln, ["inspect", onnx_path, "--fused", "--svg", nosvg], fake + ":/bin:/usr/bin")
        c.check(rc == 1 and "exit status 3" in err, "a failing dot: exit 1 naming its status: exit %d, %r" % (rc, err))
        c.check(not os.path.exists(nosvg), "a failing dot: no file left behind")
        # an unwritable file
        bad = os.path.join(tmp, "no-such-dir", "g.svg")
        r = util.run_kiln(kiln, ["inspect", onnx_path, "--svg", bad])
        c.check(r.rc == 1 and one_line(r.err) and bad in r.err, "an unwritable --svg file: %s %r" % (r.describe(), r.err))
        r = util.run_kiln(kiln, ["inspect", "--help"])
        c.check(r.rc == 0 and "--svg FILE" in r.out and "graphviz" in r.out, "inspect --help lists --svg")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    c.finish()


if __name__ == "__main__":
    main()
