# embed.cmake — writes a C file defining `const char NAME[]` with the bytes of a
# text file, so that the compiler carries the text (targets/c: the generated sources'
# prelude and kiln_abi.h) without searching the source tree at run time.
#   cmake -DIN=file.h -DOUT=file.c -DNAME=symbol -P cmake/embed.cmake
file(READ ${IN} hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "(0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,0x..,)" "\\1\n" bytes "${bytes}")
file(WRITE ${OUT}.tmp "/* generated from ${IN} by cmake/embed.cmake; never edit */\nconst char ${NAME}[] = {\n${bytes}0x00};\n")
configure_file(${OUT}.tmp ${OUT} COPYONLY)
file(REMOVE ${OUT}.tmp)
