# kann_embed_opencl(OUT_VAR DIR): a C file holding every DIR/*.cl as a string, regenerated when a
# .cl file changes, so that programs using the OpenCL kernels need no files at run time.
function(kann_embed_opencl out_var dir)
  file(GLOB sources CONFIGURE_DEPENDS ${dir}/*.cl)
  list(SORT sources)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/kann_opencl_sources.c)
  string(REPLACE ";" "|" joined "${sources}") # a ';' would split the command's argument
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DOUT=${out} -DSOURCES=${joined}
            -P ${PROJECT_SOURCE_DIR}/cmake/kann_embed_opencl_script.cmake
    DEPENDS ${sources} ${PROJECT_SOURCE_DIR}/cmake/kann_embed_opencl_script.cmake
    COMMENT "Embedding the OpenCL kernels"
    VERBATIM)
  set(${out_var} ${out} PARENT_SCOPE)
endfunction()
