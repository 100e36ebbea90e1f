# Writes the Debian change log of the package (usr/share/doc/attntrace/changelog.gz, which a
# native package must have) from CHANGELOG.md: one entry, for this version, made of that
# version's section, its items as Debian's "  * " lines wrapped within 80 columns, and the
# maintainer and the date CHANGELOG.md was last changed as its trailer; the earlier releases
# stay in CHANGELOG.md, installed beside it.
#   cmake -DCHANGELOG=CHANGELOG.md -DVERSION=0.3.0 "-DMAINTAINER=name <address>" -DOUTPUT=changelog.gz
#         -P debian_changelog.cmake
file(READ "${CHANGELOG}" text)
# CMake's lists split at ";" and group between "[" and "]": those characters are held as
# placeholders until the end.
string(REPLACE ";" "@semicolon@" text "${text}")
string(REPLACE "[" "@open@" text "${text}")
string(REPLACE "]" "@close@" text "${text}")
string(REPLACE "\n" ";" lines "${text}")

set(width 79)
set(body "")
# Appends `words` wrapped to `width`: the first line after `first`, the others after `rest`.
function(append_wrapped first rest words)
  string(REGEX MATCHALL "[^ ]+" list "${words}")
  set(line "${first}")
  set(empty TRUE)
  foreach(word IN LISTS list)
    string(REGEX REPLACE "@(semicolon|open|close)@" "x" measured "${line} ${word}")  # one character each
    string(LENGTH "${measured}" length)
    if(NOT empty AND length GREATER width)
      string(APPEND body "${line}\n")
      set(line "${rest}${word}")
    elseif(empty)
      string(APPEND line "${word}")
    else()
      string(APPEND line " ${word}")
    endif()
    set(empty FALSE)
  endforeach()
  if(NOT empty)
    string(APPEND body "${line}\n")
  endif()
  set(body "${body}" PARENT_SCOPE)
endfunction()

set(found FALSE)
set(item "")        # the text of the item being read
set(first "")       # its first line's prefix
set(rest "")        # its other lines' prefix
set(blank FALSE)    # a blank line since its last text
foreach(line IN LISTS lines)
  if(line MATCHES "^## (.*)$")
    if(found)
      break()
    endif()
    if(CMAKE_MATCH_1 STREQUAL VERSION)
      set(found TRUE)
    endif()
    continue()
  endif()
  if(NOT found)
    continue()
  endif()
  if(line MATCHES "^(- |  - )(.*)$")  # an item, or an item inside one
    append_wrapped("${first}" "${rest}" "${item}")
    if(CMAKE_MATCH_1 STREQUAL "- ")
      set(first "  * ")
      set(rest "    ")
    else()
      set(first "    - ")
      set(rest "      ")
    endif()
    set(item "${CMAKE_MATCH_2}")
    set(blank FALSE)
  elseif(line STREQUAL "")
    set(blank TRUE)
  elseif(line MATCHES "^ *(.*)$")
    if(blank AND NOT item STREQUAL "")  # a paragraph of its own within the item
      append_wrapped("${first}" "${rest}" "${item}")
      string(APPEND body "\n")
      set(first "    ")
      set(rest "    ")
      set(item "${CMAKE_MATCH_1}")
    else()
      string(APPEND item " ${CMAKE_MATCH_1}")
    endif()
    set(blank FALSE)
  endif()
endforeach()
append_wrapped("${first}" "${rest}" "${item}")
if(NOT found)
  message(FATAL_ERROR "debian_changelog: ${CHANGELOG} has no section \"## ${VERSION}\"")
endif()
append_wrapped("  * " "    " "The releases before this one: /usr/share/doc/attntrace/CHANGELOG.md.")

file(TIMESTAMP "${CHANGELOG}" date "%a, %d %b %Y %H:%M:%S +0000" UTC)
set(entry "attntrace (${VERSION}) unstable; urgency=medium\n\n${body}\n -- ${MAINTAINER}  ${date}\n")
string(REPLACE "@semicolon@" ";" entry "${entry}")
string(REPLACE "@open@" "[" entry "${entry}")
string(REPLACE "@close@" "]" entry "${entry}")
get_filename_component(folder "${OUTPUT}" DIRECTORY)
file(MAKE_DIRECTORY "${folder}")
string(REGEX REPLACE "\\.gz$" "" plain "${OUTPUT}")
file(WRITE "${plain}" "${entry}")
# Compressed as Debian's are (-n: no name or time inside, the same bytes from the same text).
execute_process(COMMAND gzip -9n -c INPUT_FILE "${plain}" OUTPUT_FILE "${OUTPUT}" COMMAND_ERROR_IS_FATAL ANY)
