// Compiles: json including problems, the layer below it; the control of the upward-include tests
// (tests/engine/layers/CMakeLists.txt).
#include "json/parser.h"
#include "problems/problem_codes.h"

int main() { return 0; }
