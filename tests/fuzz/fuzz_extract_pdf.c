/* libFuzzer: the pdf extractor on arbitrary bytes (fuzz_extract.h). */
#include "fuzz_extract.h"

FUZZ_EXTRACT(mb_extract_pdf, NULL)
