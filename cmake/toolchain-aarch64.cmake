# toolchain-aarch64.cmake — cross-builds the runtime and kiln-run for the aarch64 board target
# with Debian's cross compiler (aarch64-linux-gnu-gcc) against the target libraries that
# scripts/make_sysroots.sh extracts into build-sysroot/aarch64 (see cmake/board.cmake).
#   cmake -S . -B build-aarch64 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-aarch64.cmake && cmake --build build-aarch64
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(KILN_BOARD aarch64)
set(KILN_BOARD_TRIPLET aarch64-linux-gnu)
