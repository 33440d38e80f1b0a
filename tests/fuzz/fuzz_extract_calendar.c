/* libFuzzer: the calendar extractor on arbitrary bytes (fuzz_extract.h). */
#include "fuzz_extract.h"

FUZZ_EXTRACT(mb_extract_calendar, NULL)
