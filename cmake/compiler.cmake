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
    if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
        # GCC 12 with sanitizers reports false positives the release build does not: -Wmaybe-uninitialized
        # inside boost::system::result moves in coroutines (`co_return result<void>{}`) and
        # -Wmismatched-new-delete on asio's coroutine frame allocator. The release build keeps both warnings.
        add_compile_options(-Wno-maybe-uninitialized -Wno-mismatched-new-delete)
        if(SLUICE_SANITIZE MATCHES "thread")
            # libstdc++'s <atomic> (included by asio) defines atomic_thread_fence, which TSan does not model;
            # GCC warns at the definition even when nothing calls it. Sluice itself uses no fences.
            add_compile_options(-Wno-tsan)
        endif()
    endif()
endif()
