// Compiles Boost.JSON into the runtime library (Debian ships it header-only).
#include <boost/json/src.hpp>
