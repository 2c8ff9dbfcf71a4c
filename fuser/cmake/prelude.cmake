# prelude.cmake -- fuser_embed_prelude(VAR REPO): the kernels' device helpers
# (fuser/src/codegen/prelude/*.cuh) as C arrays in ${CMAKE_CURRENT_BINARY_DIR}/cg_prelude_files.c,
# made by reference/cmake/embed.cmake; sets VAR to that file, for the fuser library's sources
# (the main build's and the fuzz build's).
function(fuser_embed_prelude var repo)
  file(GLOB files CONFIGURE_DEPENDS ${repo}/fuser/src/codegen/prelude/*.cuh)
  set(out ${CMAKE_CURRENT_BINARY_DIR}/cg_prelude_files.c)
  add_custom_command(
    OUTPUT ${out}
    COMMAND ${CMAKE_COMMAND} -DDIR=${repo}/fuser/src/codegen/prelude -DOUT=${out} -DTABLE=cg_prelude_files
            -DENTRY=cg_prelude_file -DLOOKUP=cg_prelude_file_text -DHEADER=cg.h -DFROM=fuser/src/codegen/prelude/
            -P ${repo}/reference/cmake/embed.cmake
    DEPENDS ${files} ${repo}/reference/cmake/embed.cmake
    COMMENT "Embedding fuser/src/codegen/prelude" VERBATIM)
  set(${var} ${out} PARENT_SCOPE)
endfunction()
