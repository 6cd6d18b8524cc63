# board.cmake — the build for a Linux board target (a toolchain-<target>.cmake sets
# KILN_BOARD): only the runtime (runtime/*.c, C99) and kiln-run, cross-compiled,
# linked against the target's libarchive, cJSON and zlib from the tree that
# scripts/make_sysroots.sh extracts into build-sysroot/<target>. No LLVM, no
# compiler, no tests here: the host build runs those (tests/py/test_boards.py runs
# kiln-run under qemu-user with that tree as qemu's -L prefix).
#
# Headers come from the tree's kiln/include (only the three libraries' headers:
# the tree's own libc headers must not shadow the cross compiler's) and libraries
# from kiln/lib; the tree's lib folders are -rpath-link'ed for their dependencies.
# riscv64's tree is Debian 13's (Debian 12 has no riscv64 port), whose libarchive
# needs glibc symbols newer than the cross C library's (GLIBC_2.38): linking
# allows them undefined, and the tree's glibc provides them at run time.
set(KILN_SYSROOT ${CMAKE_SOURCE_DIR}/build-sysroot/${KILN_BOARD} CACHE PATH "target libraries (scripts/make_sysroots.sh)")
if(NOT EXISTS ${KILN_SYSROOT}/.kiln-sysroot)
  message(FATAL_ERROR "${KILN_SYSROOT} is missing: scripts/make_sysroots.sh ${KILN_BOARD} makes it (scripts/setup.sh runs it)")
endif()

set(board_libs)
foreach(l archive cjson z)
  set(f ${KILN_SYSROOT}/kiln/lib/lib${l}.so)
  if(NOT EXISTS ${f})
    message(FATAL_ERROR "${f} is missing: remove ${KILN_SYSROOT} and run scripts/make_sysroots.sh ${KILN_BOARD}")
  endif()
  list(APPEND board_libs ${f})
endforeach()

file(GLOB RUNTIME_SRC CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/runtime/*.c)
add_library(kiln_runtime STATIC ${RUNTIME_SRC})
set_target_properties(kiln_runtime PROPERTIES C_STANDARD 99 C_STANDARD_REQUIRED ON POSITION_INDEPENDENT_CODE ON)
target_include_directories(kiln_runtime PUBLIC ${CMAKE_SOURCE_DIR}/runtime)
target_include_directories(kiln_runtime SYSTEM PUBLIC ${KILN_SYSROOT}/kiln/include)
target_link_libraries(kiln_runtime PUBLIC ${board_libs} pthread dl m)
target_link_options(kiln_runtime PUBLIC
  -Wl,-rpath-link,${KILN_SYSROOT}/usr/lib/${KILN_BOARD_TRIPLET} -Wl,-rpath-link,${KILN_SYSROOT}/lib/${KILN_BOARD_TRIPLET})
if(KILN_BOARD STREQUAL "riscv64")
  target_link_options(kiln_runtime PUBLIC -Wl,--allow-shlib-undefined)
endif()

add_executable(kiln-run tools/kiln-run/kiln_run.c cli/npy.c cli/npz.c)
target_include_directories(kiln-run PRIVATE ${CMAKE_SOURCE_DIR}/cli)
target_link_libraries(kiln-run PRIVATE kiln_runtime)
