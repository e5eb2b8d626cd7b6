# `cmake --install <build> [--prefix P] --component engine`: the engine as a library for other
# projects — headers under include/larder/, liblarder.a and liblarder.so, CMake package files
# (find_package(Larder) gives Larder::larder, the shared library, and Larder::larder_static) and
# larder.pc for pkg-config (`pkg-config --libs larder`; `--static` for liblarder.a).
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set_target_properties(larder PROPERTIES EXPORT_NAME larder_static)
set_target_properties(larder_shared PROPERTIES EXPORT_NAME larder)
install(TARGETS larder larder_shared EXPORT LarderTargets COMPONENT engine
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY ${CMAKE_CURRENT_SOURCE_DIR}/include/larder
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT engine)

set(cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/Larder)
install(EXPORT LarderTargets NAMESPACE Larder:: DESTINATION ${cmake_dir} COMPONENT engine)
configure_package_config_file(${CMAKE_CURRENT_SOURCE_DIR}/LarderConfig.cmake.in
  ${CMAKE_CURRENT_BINARY_DIR}/LarderConfig.cmake INSTALL_DESTINATION ${cmake_dir})
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/LarderConfigVersion.cmake
  VERSION ${PROJECT_VERSION} COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/LarderConfig.cmake
  ${CMAKE_CURRENT_BINARY_DIR}/LarderConfigVersion.cmake
  DESTINATION ${cmake_dir} COMPONENT engine)

# The .pc file finds its prefix from where it lies, so that any --prefix works.
file(RELATIVE_PATH pc_to_prefix "/${CMAKE_INSTALL_LIBDIR}/pkgconfig" "/")
configure_file(${CMAKE_CURRENT_SOURCE_DIR}/larder.pc.in ${CMAKE_CURRENT_BINARY_DIR}/larder.pc @ONLY)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/larder.pc
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT engine)
