# toolchain-riscv64.cmake — cross-builds the runtime and kiln-run for the riscv64 board target
# with Debian's cross compiler (riscv64-linux-gnu-gcc) against the target libraries that
# scripts/make_sysroots.sh extracts into build-sysroot/riscv64 (see cmake/board.cmake).
#   cmake -S . -B build-riscv64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-riscv64.cmake && cmake --build build-riscv64
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR riscv64)
set(CMAKE_C_COMPILER riscv64-linux-gnu-gcc)
set(KILN_BOARD riscv64)
set(KILN_BOARD_TRIPLET riscv64-linux-gnu)
