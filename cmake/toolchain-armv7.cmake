# toolchain-armv7.cmake — cross-builds the runtime and kiln-run for the armv7 board target
# with Debian's cross compiler (arm-linux-gnueabihf-gcc) against the target libraries that
# scripts/make_sysroots.sh extracts into build-sysroot/armv7 (see cmake/board.cmake).
#   cmake -S . -B build-armv7 -DCMAKE_TOOLCHAIN_FILE=cmake/toolchain-armv7.cmake && cmake --build build-armv7
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR arm)
set(CMAKE_C_COMPILER arm-linux-gnueabihf-gcc)
set(KILN_BOARD armv7)
set(KILN_BOARD_TRIPLET arm-linux-gnueabihf)
