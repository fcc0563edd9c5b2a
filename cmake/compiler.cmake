# Compiler settings shared by every target: warnings, sanitizers and ccache.
find_program(SLUICE_CCACHE ccache)
if(SLUICE_CCACHE)
    set(CMAKE_C_COMPILER_LAUNCHER ${SLUICE_CCACHE})
    set(CMAKE_CXX_COMPILER_LAUNCHER ${SLUICE_CCACHE})
endif()

add_library(sluice_warnings INTERFACE)
target_compile_options(sluice_warnings INTERFACE -Wall -Wextra -Wpedantic -Wno-missing-field-initializers)
if(SLUICE_WERROR)
    target_compile_options(sluice_warnings INTERFACE -Werror)
endif()

if(SLUICE_SANITIZE)
    add_compile_options(-fsanitize=${SLUICE_SANITIZE} -fno-omit-frame-pointer -fno-sanitize-recover=all)
    add_link_options(-fsanitize=${SLUICE_SANITIZE})
endif()
