# Installs the build tree into a scratch prefix, configures and builds examples/ as a separate project against
# it (find_package(sluice)), makes a tiny model with the installed `sluice` and runs every example on it.
# Run by ctest: cmake -DBINARY_DIR=... -DSOURCE_DIR=... -DSCRATCH=... -DGENERATOR=... -P this file.
cmake_minimum_required(VERSION 3.25)

foreach(var BINARY_DIR SOURCE_DIR SCRATCH GENERATOR)
    if(NOT DEFINED ${var})
        message(FATAL_ERROR "installed_package_test: -D${var}=... is required")
    endif()
endforeach()

set(prefix ${SCRATCH}/prefix)
set(build ${SCRATCH}/examples-build)
set(model ${SCRATCH}/tiny-qwen3moe.gguf)
file(REMOVE_RECURSE ${SCRATCH})
file(MAKE_DIRECTORY ${SCRATCH})

# run(NAME OUT_VAR command...): runs a command, fails the test with its output unless it exits 0.
function(run name out_var)
    execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
    if(NOT rc EQUAL 0)
        message(FATAL_ERROR "${name} failed (${rc}):\n${ARGN}\n--- stdout\n${out}\n--- stderr\n${err}")
    endif()
    message(STATUS "${name}: ok")
    set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# 1. Install: libraries, headers, the package config and the executable.
run("install" ignored ${CMAKE_COMMAND} --install ${BINARY_DIR} --prefix ${prefix})
foreach(f include/sluice/session.hpp include/sluice/model.hpp include/sluice/error.hpp bin/sluice)
    if(NOT EXISTS ${prefix}/${f})
        message(FATAL_ERROR "the install has no ${f}")
    endif()
endforeach()
# Only the public headers: nothing of the modules' internal folders.
foreach(d include/sluice/runtime include/sluice/io include/sluice/kernels include/sluice/server include/sluice/base)
    if(EXISTS ${prefix}/${d})
        message(FATAL_ERROR "the install holds internal headers: ${d}")
    endif()
endforeach()
file(GLOB_RECURSE config ${prefix}/*/sluiceConfig.cmake)
if(NOT config)
    message(FATAL_ERROR "the install has no sluiceConfig.cmake")
endif()

# 2. The examples as a project of their own, seeing only the installed package (no build-type flags: the
#    work happens inside the installed libraries, which are already optimized).
set(configure_args -S ${SOURCE_DIR}/examples -B ${build} -G ${GENERATOR} -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_BUILD_TYPE=)
if(CXX_COMPILER)
    list(APPEND configure_args -DCMAKE_CXX_COMPILER=${CXX_COMPILER})
endif()
if(COMPILER_LAUNCHER)
    list(APPEND configure_args -DCMAKE_CXX_COMPILER_LAUNCHER=${COMPILER_LAUNCHER})
endif()
if(SANITIZE) # sanitized libraries need the sanitizer runtimes in the program too
    list(APPEND configure_args -DCMAKE_CXX_FLAGS=-fsanitize=${SANITIZE} -DCMAKE_EXE_LINKER_FLAGS=-fsanitize=${SANITIZE})
endif()
run("configure examples" ignored ${CMAKE_COMMAND} ${configure_args})
run("build examples" ignored ${CMAKE_COMMAND} --build ${build})

# 3. A tiny model from the installed executable, then each example on it.
run("mkmodel" ignored ${prefix}/bin/sluice mkmodel -q -o ${model} --preset tiny-qwen3moe --type q8_0 --seed 1)
run("generate" generated ${build}/generate ${model} "Hello" 8)
if(generated STREQUAL "")
    message(FATAL_ERROR "generate printed nothing")
endif()
run("concurrent" concurrent ${build}/concurrent ${model} 3)
if(NOT concurrent MATCHES "first completed, second cancelled")
    message(FATAL_ERROR "concurrent:\n${concurrent}")
endif()
file(REMOVE_RECURSE ${SCRATCH})
