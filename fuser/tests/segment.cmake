# The segmenter and the random fusions (issue 19). test_segment: the issue's
# fusions plan to the kernels their reduction axes force and compile.
# fuser-fuzz: hundreds of generated fusions plan (no crash, never under the
# lower bound), run on the interpreter, compile with NVRTC (compile), and on a
# GPU agree with the interpreter (gpu; exit 77 without one).
fuser_add_test(test_segment SOURCES test_segment.c LABELS compile ARGS ${CMAKE_CURRENT_SOURCE_DIR})
add_test(NAME test_fuzz_plan COMMAND fuser_fuzz check --count 1000 --seed 11 --device plan)
add_test(NAME test_fuzz_compile COMMAND fuser_fuzz check --count 250 --seed 1 --device compile)
add_test(NAME test_fuzz_gpu COMMAND fuser_fuzz check --count 200 --seed 7 --device gpu)
set_tests_properties(test_fuzz_plan PROPERTIES LABELS unit)
set_tests_properties(test_fuzz_compile PROPERTIES LABELS compile TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "FUSER_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/fuzz-cache")
set_tests_properties(test_fuzz_gpu PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77)
# The same with the other documented ops drawn too (--ops extended: masks, where, iota, log,
# reciprocal, pow, take, scatter_add; a seed of its own, fx_13_*).
add_test(NAME test_fuzz_ops_plan COMMAND fuser_fuzz check --ops extended --count 1000 --seed 13 --device plan)
add_test(NAME test_fuzz_ops_compile COMMAND fuser_fuzz check --ops extended --count 100 --seed 13 --device compile)
add_test(NAME test_fuzz_ops_gpu COMMAND fuser_fuzz check --ops extended --count 200 --seed 13 --device gpu)
set_tests_properties(test_fuzz_ops_plan PROPERTIES LABELS unit)
set_tests_properties(test_fuzz_ops_compile PROPERTIES LABELS compile TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "FUSER_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/fuzz-cache")
set_tests_properties(test_fuzz_ops_gpu PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77)
# Tall fusions (--ops rows: a per-row input, `where` on one bool a row) planned for 8 SMs, so
# that the rows outnumber the grid and blocks and warps loop over them (fr_17_*). Their transposes
# are staged at every size (FUSER_TRANSPOSE=1): by default the transpose scheduler takes only
# reads of more than an eighth of the L2, which no generated fusion has, and these 3 kernels
# keep it in the generator's checks.
add_test(NAME test_fuzz_rows_plan COMMAND fuser_fuzz check --ops rows --sms 8 --count 300 --seed 17 --device plan)
add_test(NAME test_fuzz_rows_compile COMMAND fuser_fuzz check --ops rows --sms 8 --count 100 --seed 17 --device compile)
add_test(NAME test_fuzz_rows_gpu COMMAND fuser_fuzz check --ops rows --sms 8 --count 200 --seed 17 --device gpu)
set_tests_properties(test_fuzz_rows_plan PROPERTIES LABELS unit)
set_tests_properties(test_fuzz_rows_compile PROPERTIES LABELS compile TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "FUSER_TRANSPOSE=1;FUSER_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/fuzz-cache")
set_tests_properties(test_fuzz_rows_gpu PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77 ENVIRONMENT "FUSER_TRANSPOSE=1")
# The same generator with the outer scheduler's normalizations on (fu_plan_options.outer_norm, off by
# default until measured): planned for 2 SMs, so that the generator's small fusions get their tiles;
# the report must count some.
add_test(NAME test_fuzz_outer_norm_compile COMMAND fuser_fuzz check --ops rows --sms 2 --count 100 --seed 19 --device compile)
add_test(NAME test_fuzz_outer_norm_gpu COMMAND fuser_fuzz check --ops rows --sms 2 --count 200 --seed 19 --device gpu)
set_tests_properties(test_fuzz_outer_norm_compile PROPERTIES LABELS compile TIMEOUT 600 SKIP_RETURN_CODE 77
  FAIL_REGULAR_EXPRESSION "outer normalizations 0\\)"
  ENVIRONMENT "FUSER_OUTER_NORM=1;FUSER_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/fuzz-cache")
set_tests_properties(test_fuzz_outer_norm_gpu PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77
  FAIL_REGULAR_EXPRESSION "outer normalizations 0\\)" ENVIRONMENT "FUSER_OUTER_NORM=1")
# The sweep: every op over every dtype of its operands and extents 0, 1, 3 and 1027, where the verifier
# accepts it (sw_*: ~2400 fusions); each case must be accepted for some dtypes.
add_test(NAME test_sweep_plan COMMAND fuser_fuzz sweep --device plan)
add_test(NAME test_sweep_compile COMMAND fuser_fuzz sweep --device compile)
add_test(NAME test_sweep_gpu COMMAND fuser_fuzz sweep --device gpu)
set_tests_properties(test_sweep_plan PROPERTIES LABELS unit)
set_tests_properties(test_sweep_compile PROPERTIES LABELS compile TIMEOUT 600 SKIP_RETURN_CODE 77
  ENVIRONMENT "FUSER_CACHE_DIR=${CMAKE_CURRENT_BINARY_DIR}/fuzz-cache")
set_tests_properties(test_sweep_gpu PROPERTIES LABELS gpu TIMEOUT 600 SKIP_RETURN_CODE 77)
if(FUSER_SANITIZE)
  set_property(TEST test_fuzz_gpu test_fuzz_ops_gpu test_fuzz_rows_gpu test_sweep_gpu APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=protect_shadow_gap=0")
endif()
# On a GPU: the issue's fusions against the interpreter, and the atomic bf16
# scatter with skewed ids (issue 21 item 8).
add_test(NAME test_segment_examples_gpu COMMAND fuser_fuzz check --dir ${CMAKE_CURRENT_SOURCE_DIR}/segment --device gpu)
set_tests_properties(test_segment_examples_gpu PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
fuser_add_test(test_segment_gpu SOURCES test_segment_gpu.c ../fuzzgen/check.c LABELS gpu)
target_include_directories(test_segment_gpu PRIVATE ${PROJECT_SOURCE_DIR}/fuser/fuzzgen)
if(FUSER_SANITIZE)
  set_property(TEST test_segment_examples_gpu test_segment_gpu APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=protect_shadow_gap=0")
endif()
# Fusions that still plan above their lower bound, one or two per cause (docs/segments.md): they
# plan, run on the interpreter and, on a GPU, agree with it; a fix of a cause brings its files to
# the bound (their headers say so).
add_test(NAME test_above_bound_plan COMMAND fuser_fuzz check --dir ${CMAKE_CURRENT_SOURCE_DIR}/above_bound --device plan)
set_tests_properties(test_above_bound_plan PROPERTIES LABELS unit)
add_test(NAME test_above_bound_gpu COMMAND fuser_fuzz check --dir ${CMAKE_CURRENT_SOURCE_DIR}/above_bound --device gpu)
set_tests_properties(test_above_bound_gpu PROPERTIES LABELS gpu SKIP_RETURN_CODE 77)
if(FUSER_SANITIZE)
  set_property(TEST test_above_bound_gpu APPEND PROPERTY ENVIRONMENT "ASAN_OPTIONS=protect_shadow_gap=0")
endif()
