# The text format: parser, printer, builder from text, suites/ round trips.
fuser_add_test(test_parse SOURCES test_parse.c LABELS unit)
