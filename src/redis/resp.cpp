// Names of reply types, for messages and test output.
#include "rankd/redis/resp.h"

namespace rankd::redis {

std::string_view TypeName(Type type) {
  switch (type) {
    case Type::kSimpleString:
      return "simple string";
    case Type::kError:
      return "error";
    case Type::kInteger:
      return "integer";
    case Type::kBulkString:
      return "bulk string";
    case Type::kNull:
      return "null";
    case Type::kDouble:
      return "double";
    case Type::kBoolean:
      return "boolean";
    case Type::kBigNumber:
      return "big number";
    case Type::kVerbatim:
      return "verbatim string";
    case Type::kArray:
      return "array";
    case Type::kMap:
      return "map";
    case Type::kSet:
      return "set";
    case Type::kAttribute:
      return "attribute";
    case Type::kPush:
      return "push";
  }
  return "unknown";
}

}  // namespace rankd::redis
