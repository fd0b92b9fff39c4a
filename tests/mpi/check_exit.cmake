# Runs PROGRAM MODE under mpiexec -np NP within LIMIT seconds and checks that it ended with a
# non-zero exit code (not by the time limit) and that exactly EXPECT_COUNT lines of its output
# (stdout and stderr) match the regular expression EXPECT. Used by the World exit tests.
string(TIMESTAMP start "%s")
execute_process(
  COMMAND ${MPIEXEC} --allow-run-as-root --oversubscribe -np ${NP} ${PROGRAM} ${MODE}
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err TIMEOUT ${LIMIT})
string(TIMESTAMP stop "%s")
math(EXPR seconds "${stop} - ${start}")
message("---- output (exit: ${rc}, about ${seconds} s) ----\n${out}${err}----")

if(NOT rc MATCHES "^[0-9]+$")
  message(FATAL_ERROR "the job did not end by itself within ${LIMIT} s: ${rc}")
endif()
if(rc EQUAL 0)
  message(FATAL_ERROR "the job exited 0; an error exit must be non-zero")
endif()

# One list element per line; a ';' would split a line in two, so it reads as ',' for EXPECT.
string(REPLACE ";" "," text "${out}${err}")
string(REPLACE "\n" ";" lines "${text}")
set(count 0)
foreach(line IN LISTS lines)
  if(line MATCHES "${EXPECT}")
    math(EXPR count "${count} + 1")
  endif()
endforeach()
if(NOT count EQUAL EXPECT_COUNT)
  message(FATAL_ERROR "${count} lines match '${EXPECT}', expected ${EXPECT_COUNT}")
endif()
