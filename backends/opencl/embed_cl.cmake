# Writes OUT: the OpenCL C files in SOURCES (a ;-list, in order) as one C string,
# const char ocl_kernel_source[], and in ocl_kernel_prelude_len the length in bytes of
# its first PRELUDE files (what the fused entry's generated kernels are built on). Run
# at build time, so editing a .cl rebuilds it.
set(text "")
set(i 0)
set(prelude_len 0)
foreach(f ${SOURCES})
  file(READ ${f} part)
  string(APPEND text "${part}\n")
  math(EXPR i "${i} + 1")
  if(i EQUAL PRELUDE)
    string(LENGTH "${text}" prelude_len)
  endif()
endforeach()
file(WRITE ${OUT}.tmp "/* Generated from the .cl files in backends/opencl/kernels by embed_cl.cmake: do not edit. */\n")
file(APPEND ${OUT}.tmp "const char ocl_kernel_source[] = {\n")
# hex bytes, 16 per line
string(HEX "${text}" hex)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n" bytes "${bytes}")
file(APPEND ${OUT}.tmp "${bytes}0x00};\n")
file(APPEND ${OUT}.tmp "const unsigned long ocl_kernel_prelude_len = ${prelude_len};\n")
file(RENAME ${OUT}.tmp ${OUT})
