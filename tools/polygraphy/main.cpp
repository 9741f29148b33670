// Placeholder until the CLI lands: the tool dispatch lives in src/tools.
#include <cstdio>

int main() {
    std::puts("[!] polygraphy: no tools are built yet");
    return 1;
}
