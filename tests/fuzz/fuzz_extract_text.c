/* libFuzzer: the text extractor on arbitrary bytes (fuzz_extract.h). */
#include "fuzz_extract.h"

FUZZ_EXTRACT(mb_extract_text, "windows-1252")
