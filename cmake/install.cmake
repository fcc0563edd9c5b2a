# The installed CMake package: find_package(sluice) gives sluice::runtime (and sluice::base, sluice::io,
# sluice::kernels it links). Only the public headers, include/sluice/*.hpp, are installed (<sluice/session.hpp>).
# Every target an installed library links must be exported too, or configuring fails: link internal helpers
# such as sluice_warnings as $<BUILD_INTERFACE:sluice_warnings>.
include(CMakePackageConfigHelpers)

set(SLUICE_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/sluice)

# The public headers use coroutines and other C++20 features: programs linking the libraries need C++20 too.
foreach(lib sluice_base sluice_io sluice_kernels sluice_runtime)
    target_compile_features(${lib} PUBLIC cxx_std_20)
endforeach()

install(EXPORT sluice_targets
    NAMESPACE sluice::
    FILE sluiceTargets.cmake
    DESTINATION ${SLUICE_INSTALL_CMAKEDIR})

configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/sluiceConfig.cmake.in
    ${CMAKE_CURRENT_BINARY_DIR}/sluiceConfig.cmake
    INSTALL_DESTINATION ${SLUICE_INSTALL_CMAKEDIR})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/sluiceConfigVersion.cmake
    COMPATIBILITY SameMinorVersion)
install(FILES
    ${CMAKE_CURRENT_BINARY_DIR}/sluiceConfig.cmake
    ${CMAKE_CURRENT_BINARY_DIR}/sluiceConfigVersion.cmake
    DESTINATION ${SLUICE_INSTALL_CMAKEDIR})
