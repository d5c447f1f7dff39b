#include "crd/raw_pool.h"

#include <algorithm>
#include <cctype>
#include <string_view>

#include "crd/strict_json.h"

namespace vto::crd {
namespace {

using nlohmann::json;

enum class Kind { String, Int32, Int64, StringList, Message, MessageList };

struct Message;
struct Field {
  std::string_view name;
  Kind kind;
  const Message* message = nullptr;  // Message and MessageList
  int64_t max = 0;                   // Int32 and Int64: from 0 to max
};
struct Message {
  std::string_view name;
  std::vector<Field> fields;  // in the order problems are reported

  const Field* find(std::string_view key) const {
    for (const auto& field : fields)
      if (field.name == key) return &field;
    return nullptr;
  }
};

// WorkerPoolSpec and its nested messages, from the discovery document (rawPoolSchema() is held to
// it by a unit test). Enums are strings: proto3 JSON also reads enum numbers, which no check here
// would recognise.
const Message& workerPoolSpec() {
  static const Message envVar{"EnvVar", {{"name", Kind::String}, {"value", Kind::String}}};
  static const Message containerSpec{"ContainerSpec",
                                     {{"imageUri", Kind::String},
                                      {"command", Kind::StringList},
                                      {"args", Kind::StringList},
                                      {"env", Kind::MessageList, &envVar}}};
  static const Message pythonPackageSpec{"PythonPackageSpec",
                                         {{"executorImageUri", Kind::String},
                                          {"packageUris", Kind::StringList},
                                          {"pythonModule", Kind::String},
                                          {"args", Kind::StringList},
                                          {"env", Kind::MessageList, &envVar}}};
  static const Message reservationAffinity{
      "ReservationAffinity",
      {{"reservationAffinityType", Kind::String}, {"key", Kind::String}, {"values", Kind::StringList}}};
  static const Message machineSpec{"MachineSpec",
                                   {{"machineType", Kind::String},
                                    {"acceleratorType", Kind::String},
                                    {"acceleratorCount", Kind::Int32, nullptr, kMaxRawAcceleratorCount},
                                    {"tpuTopology", Kind::String},
                                    {"gpuPartitionSize", Kind::String},
                                    {"reservationAffinity", Kind::Message, &reservationAffinity}}};
  static const Message diskSpec{"DiskSpec",
                                {{"bootDiskType", Kind::String}, {"bootDiskSizeGb", Kind::Int32, nullptr, 65536}}};
  static const Message nfsMount{"NfsMount", {{"server", Kind::String}, {"path", Kind::String}, {"mountPoint", Kind::String}}};
  static const Message lustreMount{"LustreMount",
                                   {{"instanceIp", Kind::String},
                                    {"volumeHandle", Kind::String},
                                    {"filesystem", Kind::String},
                                    {"mountPoint", Kind::String}}};
  static const Message pool{"WorkerPoolSpec",
                            {{"machineSpec", Kind::Message, &machineSpec},
                             {"replicaCount", Kind::Int64, nullptr, kMaxRawReplicaCount},
                             {"containerSpec", Kind::Message, &containerSpec},
                             {"pythonPackageSpec", Kind::Message, &pythonPackageSpec},
                             {"diskSpec", Kind::Message, &diskSpec},
                             {"nfsMounts", Kind::MessageList, &nfsMount},
                             {"lustreMounts", Kind::MessageList, &lustreMount}}};
  return pool;
}

// A whole number as proto3 JSON writes one (a number, or digits in a string), within [0, max].
std::optional<int64_t> wholeNumber(const json& value, int64_t max) {
  double number = 0;
  if (value.is_number()) {
    number = value.get<double>();
  } else if (value.is_string()) {
    const auto& text = value.get_ref<const std::string&>();
    if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
    number = static_cast<double>(std::stoll(text));
  } else {
    return std::nullopt;
  }
  if (!(number >= 0 && number <= static_cast<double>(max)) || number != static_cast<double>(static_cast<int64_t>(number)))
    return std::nullopt;
  return static_cast<int64_t>(number);
}

// "machine_spec" -> "machinespec": how a snake_case (or oddly cased) key is matched to its field.
std::string folded(std::string_view key) {
  std::string out;
  for (char c : key)
    if (c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string unknownKeyMessage(std::string_view key, const Message& message) {
  for (const auto& field : message.fields) {
    if (folded(key) == folded(field.name)) {
      return "unknown field; write it as " + std::string(field.name) +
             ": vto reads and checks only Vertex's camelCase JSON names, and Vertex would read this one too";
    }
  }
  std::string names;
  for (const auto& field : message.fields) names += (names.empty() ? "" : ", ") + std::string(field.name);
  return "unknown field; a Vertex " + std::string(message.name) + " has " + names;
}

// Reports every key of `object` that `message` does not have, and every value of the wrong type.
class Walker {
 public:
  explicit Walker(std::vector<RawPool::Unreadable>& out) : out_(out) {}

  void object(const json& value, const Message& message, const std::string& path) {
    for (const auto& [key, item] : value.items()) {
      if (!message.find(key)) out_.push_back({joinPath(path, key), unknownKeyMessage(key, message)});
    }
    for (const auto& field : message.fields) {
      auto found = value.find(std::string(field.name));
      if (found != value.end() && !found->is_null()) this->field(*found, field, joinPath(path, std::string(field.name)));
    }
  }

 private:
  void field(const json& value, const Field& field, const std::string& path) {
    switch (field.kind) {
      case Kind::String:
        if (!value.is_string()) out_.push_back({path, "must be a string, not " + describeType(value)});
        break;
      case Kind::Int32:
      case Kind::Int64:
        if (!wholeNumber(value, field.max))
          out_.push_back({path, "must be a whole number from 0 to " + std::to_string(field.max) + ", e.g. 1"});
        break;
      case Kind::StringList:
        if (!value.is_array()) {
          out_.push_back({path, "must be a list of strings, not " + describeType(value)});
          break;
        }
        for (size_t i = 0; i < value.size(); ++i)
          if (!value[i].is_string()) out_.push_back({indexPath(path, i), "must be a string, not " + describeType(value[i])});
        break;
      case Kind::Message:
        if (!value.is_object()) out_.push_back({path, "must be an object (a Vertex " + std::string(field.message->name) + ")"});
        else object(value, *field.message, path);
        break;
      case Kind::MessageList:
        if (!value.is_array()) {
          out_.push_back({path, "must be a list of Vertex " + std::string(field.message->name) + " objects"});
          break;
        }
        for (size_t i = 0; i < value.size(); ++i) {
          if (!value[i].is_object()) out_.push_back({indexPath(path, i), "must be an object (a Vertex " + std::string(field.message->name) + ")"});
          else object(value[i], *field.message, indexPath(path, i));
        }
        break;
    }
  }

  std::vector<RawPool::Unreadable>& out_;
};

// The value at `key` of `object` when it is an object / string / list, else nullptr or "" (the
// walker has reported it).
const json* objectAt(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_object() ? &*found : nullptr;
}
std::string stringAt(const json& object, const char* key) {
  auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : "";
}
std::vector<std::string> stringsAt(const json& object, const char* key) {
  std::vector<std::string> out;
  auto found = object.find(key);
  if (found == object.end() || !found->is_array()) return out;
  for (const auto& item : *found)
    if (item.is_string()) out.push_back(item.get<std::string>());
  return out;
}
void countAt(const json& object, const char* key, int64_t max, int64_t& into) {
  auto found = object.find(key);
  if (found == object.end() || found->is_null()) return;
  if (auto value = wholeNumber(*found, max)) into = *value;
}

std::string typeName(const Field& field) {
  switch (field.kind) {
    case Kind::String: return "string";
    case Kind::Int32: return "int32";
    case Kind::Int64: return "int64";
    case Kind::StringList: return "[]string";
    case Kind::Message: return std::string(field.message->name);
    case Kind::MessageList: return "[]" + std::string(field.message->name);
  }
  return "";
}

void describe(const Message& message, std::map<std::string, std::map<std::string, std::string>>& out) {
  auto& fields = out[std::string(message.name)];
  for (const auto& field : message.fields) {
    fields[std::string(field.name)] = typeName(field);
    if (field.message && !out.count(std::string(field.message->name))) describe(*field.message, out);
  }
}

}  // namespace

RawPool readRawPool(const json& pool) {
  RawPool out;
  if (!pool.is_object()) return out;
  Walker(out.unreadable).object(pool, workerPoolSpec(), "");
  if (const json* machine = objectAt(pool, "machineSpec")) {
    out.machineType = stringAt(*machine, "machineType");
    out.acceleratorType = stringAt(*machine, "acceleratorType");
    if (out.acceleratorType == "ACCELERATOR_TYPE_UNSPECIFIED") out.acceleratorType.clear();
    countAt(*machine, "acceleratorCount", kMaxRawAcceleratorCount, out.acceleratorCount);
    out.tpuTopology = stringAt(*machine, "tpuTopology");
    if (const json* affinity = objectAt(*machine, "reservationAffinity")) {
      out.reservationAffinity = RawPool::ReservationAffinity{stringAt(*affinity, "reservationAffinityType"),
                                                             stringAt(*affinity, "key"), stringsAt(*affinity, "values")};
    }
  }
  countAt(pool, "replicaCount", kMaxRawReplicaCount, out.replicaCount);
  if (const json* package = objectAt(pool, "pythonPackageSpec")) {
    out.packageUris = stringsAt(*package, "packageUris");
    out.executorImageUri = stringAt(*package, "executorImageUri");
  }
  if (const json* container = objectAt(pool, "containerSpec")) out.containerImageUri = stringAt(*container, "imageUri");
  if (auto mounts = pool.find("nfsMounts"); mounts != pool.end() && mounts->is_array()) {
    for (const auto& mount : *mounts) {
      // A mount that is not an object is reported by the walker; it still holds its index here.
      out.nfsMounts.push_back(mount.is_object() ? RawPool::NfsMount{stringAt(mount, "server"), stringAt(mount, "path")}
                                                : RawPool::NfsMount{});
    }
  }
  if (auto mounts = pool.find("lustreMounts"); mounts != pool.end() && !mounts->is_null())
    out.lustreMounts = mounts->is_array() ? mounts->size() : 1;
  return out;
}

std::map<std::string, std::map<std::string, std::string>> rawPoolSchema() {
  std::map<std::string, std::map<std::string, std::string>> out;
  describe(workerPoolSpec(), out);
  return out;
}

}  // namespace vto::crd
