# Writes the man page and the completion scripts by asking the built program:
#   cmake -DPROGRAM=path/to/attntrace -DDIR=out -P manual.cmake
file(MAKE_DIRECTORY "${DIR}")
foreach(pair "attntrace.1|--man" "attntrace.bash|--completions=bash" "_attntrace|--completions=zsh"
             "attntrace.fish|--completions=fish")
  string(REPLACE "|" ";" pair "${pair}")
  list(GET pair 0 name)
  list(GET pair 1 argument)
  execute_process(COMMAND "${PROGRAM}" "${argument}" OUTPUT_FILE "${DIR}/${name}.new" RESULT_VARIABLE status)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "${PROGRAM} ${argument} failed: ${status}")
  endif()
  file(RENAME "${DIR}/${name}.new" "${DIR}/${name}")
endforeach()
# Installed compressed, as Debian's man pages are (-n: no name or time inside, the same bytes
# from the same page).
execute_process(COMMAND gzip -9n -c INPUT_FILE "${DIR}/attntrace.1"
                OUTPUT_FILE "${DIR}/attntrace.1.gz" COMMAND_ERROR_IS_FATAL ANY)
