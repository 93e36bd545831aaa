# ctest's plot_bench: a tiny `imgpipe bench --json`, then tools/plot_bench.py on it; the charts must appear.
# Run with -DIMGPIPE=<imgpipe binary> -DSCRIPT=<tools/plot_bench.py> -DOUT=<scratch folder>. Prints
# "matplotlib is not installed" where python3-matplotlib is missing, and "no backend is usable here" where
# imgpipe can run nothing (no GPU, and a build without OpenCV); ctest counts either as a skip.
# The first python3 that imports matplotlib: Debian's in /usr/bin (python3-matplotlib), else the one on PATH.
find_program(PYTHON3_SYSTEM python3 PATHS /usr/bin NO_DEFAULT_PATH)
find_program(PYTHON3_PATH python3)
set(PYTHON3 "")
foreach(candidate IN ITEMS "${PYTHON3_SYSTEM}" "${PYTHON3_PATH}")
  if(candidate AND NOT PYTHON3)
    execute_process(COMMAND "${candidate}" -c "import matplotlib" RESULT_VARIABLE has_matplotlib
                    OUTPUT_QUIET ERROR_QUIET)
    if(has_matplotlib EQUAL 0)
      set(PYTHON3 "${candidate}")
    endif()
  endif()
endforeach()
if(NOT PYTHON3)
  message("plot_bench: matplotlib is not installed for any python3 here (Debian: python3-matplotlib)")
  return()
endif()
execute_process(COMMAND "${IMGPIPE}" backends OUTPUT_VARIABLE backends_output ERROR_QUIET)
if(backends_output MATCHES "auto picks: nothing")
  message("plot_bench: no backend is usable here, so bench has nothing to measure")
  return()
endif()
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")
execute_process(
  COMMAND "${IMGPIPE}" bench --frames 3 --repeats 1 --warmup 1 --size 64x48 --distinct 2 --ceiling-mib 2
          --ops resize=32x24,gaussian=5:1.0 --json "${OUT}/bench.json"
  RESULT_VARIABLE bench_result OUTPUT_VARIABLE bench_output ERROR_VARIABLE bench_output)
if(NOT bench_result EQUAL 0)
  message(FATAL_ERROR "imgpipe bench failed (${bench_result}):\n${bench_output}")
endif()
execute_process(
  COMMAND "${PYTHON3}" "${SCRIPT}" "${OUT}/bench.json" --out "${OUT}"
  RESULT_VARIABLE plot_result OUTPUT_VARIABLE plot_output ERROR_VARIABLE plot_output)
message("${plot_output}")
if(plot_output MATCHES "matplotlib is not installed")
  return()
endif()
if(NOT plot_result EQUAL 0)
  message(FATAL_ERROR "plot_bench.py failed (${plot_result})")
endif()
if(NOT EXISTS "${OUT}/throughput.png")
  message(FATAL_ERROR "plot_bench.py wrote no throughput.png")
endif()
