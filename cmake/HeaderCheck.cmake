# stet_check_headers(NAME DIR LIBS...): one generated source per header under
# src/DIR, each including only that header, built as an object library of the
# normal build: a header that does not compile alone (that does not include
# what it uses) fails the build. LIBS give the include paths and definitions
# the layer's users get.
function(stet_check_headers name dir)
  file(GLOB_RECURSE headers RELATIVE ${CMAKE_SOURCE_DIR}/src CONFIGURE_DEPENDS
       ${CMAKE_SOURCE_DIR}/src/${dir}/*.h)
  set(sources)
  foreach(h ${headers})
    string(MAKE_C_IDENTIFIER ${h} id)
    set(src ${CMAKE_CURRENT_BINARY_DIR}/header_check/${id}.cc)
    file(GENERATE OUTPUT ${src} CONTENT "#include \"${h}\"\n")
    list(APPEND sources ${src})
  endforeach()
  add_library(${name} OBJECT ${sources})
  target_link_libraries(${name} PRIVATE ${ARGN})
endfunction()
