// main() for test binaries with child roles (child_process.h): runs a role when asked,
// else the tests.
#include "tests/support/child_process.h"

int main(int argc, char** argv) { return farm::testing::RunTestMain(argc, argv); }
