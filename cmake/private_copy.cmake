# Makes one object of a second copy of the hot kernels (attention/isa.hpp) in which only the
# functions of namespace attntrace::NAMESPACE stay global. Everything else the copy defines
# (Eigen's templates, the standard library's, our inline functions), compiled for another
# instruction set, becomes local to it: the linker would otherwise keep one of two same-named
# definitions, and the baseline's code could end up calling AVX2 instructions.
#   -D OBJECTS=a.o|b.o -D OUTPUT=copy.o -D NAMESPACE=isa_avx2 -D LINKER=ld -D NM=nm -D OBJCOPY=objcopy
string(REPLACE "|" ";" objects "${OBJECTS}")
# -r: one relocatable object; --force-group-allocation: no COMDAT groups left, so that its
# copies of templates are not merged with the others; -d: common symbols allocated.
execute_process(COMMAND "${LINKER}" -r -d --force-group-allocation -o "${OUTPUT}.linked" ${objects}
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${NM}" --defined-only --extern-only --format=posix "${OUTPUT}.linked"
                OUTPUT_VARIABLE symbols COMMAND_ERROR_IS_FATAL ANY)
string(LENGTH "${NAMESPACE}" length)
set(prefix "_ZN9attntrace${length}${NAMESPACE}")  # attntrace::NAMESPACE::…, as mangled
string(REPLACE "\n" ";" lines "${symbols}")
set(keep "")
foreach(line IN LISTS lines)
  if(line MATCHES "^(${prefix}[^ ]*) ")
    string(APPEND keep "${CMAKE_MATCH_1}\n")
  endif()
endforeach()
if(keep STREQUAL "")
  message(FATAL_ERROR "private_copy: ${OUTPUT}.linked defines nothing in attntrace::${NAMESPACE}")
endif()
file(WRITE "${OUTPUT}.keep" "${keep}")
execute_process(COMMAND "${OBJCOPY}" "--keep-global-symbols=${OUTPUT}.keep" "${OUTPUT}.linked" "${OUTPUT}"
                COMMAND_ERROR_IS_FATAL ANY)
file(REMOVE "${OUTPUT}.linked")
# What is still global must be the namespace's alone (a GNU "unique" symbol would not have
# been made local: the copy is compiled with -fno-gnu-unique).
execute_process(COMMAND "${NM}" --defined-only --extern-only --format=posix "${OUTPUT}"
                OUTPUT_VARIABLE symbols COMMAND_ERROR_IS_FATAL ANY)
string(REPLACE "\n" ";" lines "${symbols}")
foreach(line IN LISTS lines)
  if(NOT line STREQUAL "" AND NOT line MATCHES "^${prefix}")
    file(REMOVE "${OUTPUT}")
    message(FATAL_ERROR "private_copy: ${OUTPUT} would share a symbol with the baseline: ${line}")
  endif()
endforeach()
