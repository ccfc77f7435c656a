# Writes OUT: a C++ source holding each NAMES[i].jinja of DIR as a raw string
# literal (run at build time by src/template/CMakeLists.txt), so the built-in
# chat templates ship inside the binary byte for byte as they are in the tree.
string(REPLACE "," ";" NAMES "${NAMES}")  # a comma-separated list on the command line
set(delim "stet_jinja")
file(WRITE "${OUT}.tmp"
  "// Generated from src/template/builtin/*.jinja by embed.cmake: do not edit.\n"
  "#include \"template/builtin_templates.h\"\n\nnamespace stet::builtin {\n\n"
  "const EmbeddedTemplate kEmbedded[] = {\n")
foreach(name IN LISTS NAMES)
  file(READ "${DIR}/${name}.jinja" text)
  string(FIND "${text}" ")${delim}\"" clash)
  if(NOT clash EQUAL -1)
    message(FATAL_ERROR "${name}.jinja contains the raw-string delimiter )${delim}\"")
  endif()
  file(APPEND "${OUT}.tmp" "    {\"${name}\", R\"${delim}(${text})${delim}\"},\n")
endforeach()
list(LENGTH NAMES count)
file(APPEND "${OUT}.tmp" "};\nconst size_t kEmbeddedCount = ${count};\n\n}  // namespace stet::builtin\n")
file(RENAME "${OUT}.tmp" "${OUT}")
