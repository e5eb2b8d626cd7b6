# config_test: the option table, conf/larder.conf, CONFIG GET/SET/REWRITE.
add_executable(config_test config_test.cc config_rewrite_test.cc)
target_link_libraries(config_test PRIVATE larder_config GTest::gtest_main)
target_compile_definitions(config_test PRIVATE LARDER_SOURCE_DIR="${CMAKE_SOURCE_DIR}")
gtest_discover_tests(config_test)

# engine_defaults_test: the server's engine options default to larder::Options' values.
add_executable(engine_defaults_test engine_defaults_test.cc)
target_link_libraries(engine_defaults_test PRIVATE larder_config GTest::gtest_main)
gtest_discover_tests(engine_defaults_test)
