#include <cstdio>
int main() { std::puts("kiln"); return 0; }
