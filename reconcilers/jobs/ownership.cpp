#include "reconcilers/jobs/ownership.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include <stdexcept>

#include "base/gcp_names.h"
#include "base/rfc3339.h"
#include "crd/labels.h"
#include "crd/render.h"
#include "crd/yaml_json.h"

namespace vto::reconcilers {

namespace {
// 160 bits of the HMAC in lowercase hex: a valid label value (at most 63 characters).
constexpr size_t kTagHexDigits = 40;
constexpr size_t kMinKeyBytes = 32;
constexpr size_t kMaxKeys = 8;
constexpr size_t kMaxKeyFileBytes = 64 * 1024;

bool equalInConstantTime(const std::string& a, const std::string& b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}
}  // namespace

std::string labelOf(const std::map<std::string, std::string>& labels, const char* key) {
  auto found = labels.find(key);
  return found == labels.end() ? "" : found->second;
}

std::string_view describe(JobOwner owner) {
  switch (owner) {
    case JobOwner::Ours: return "made by this operator";
    case JobOwner::Legacy: return "made by the release before (no ownership tag, created before the key was issued)";
    case JobOwner::OtherCluster: return "made by another cluster's operator";
    case JobOwner::Forged: return "not made by this operator (its ownership tag does not verify)";
  }
  return "unknown";
}

bool isTheRunsJob(const std::map<std::string, std::string>& labels, const std::string& ns, const std::string& name,
                  const std::string& uid) {
  if (labelOf(labels, crd::kRunUidLabel) == crd::sanitizeLabelValue(uid)) return true;
  auto jobNamespace = labelOf(labels, crd::kNamespaceLabel), jobName = labelOf(labels, crd::kNameLabel);
  return !jobNamespace.empty() && !jobName.empty() && jobNamespace == crd::sanitizeLabelValue(ns) &&
         jobName == crd::sanitizeLabelValue(name);
}

OwnershipKeys parseOwnershipKeys(const std::string& yaml) {
  if (yaml.size() > kMaxKeyFileBytes) throw std::invalid_argument("the ownership key file is larger than 64 KiB");
  auto documents = crd::parseYamlDocuments(yaml);
  if (documents.size() != 1 || !documents.front().is_object())
    throw std::invalid_argument("the ownership key file must be one YAML mapping with `keys` (a list of strings)");
  const auto& document = documents.front();
  OwnershipKeys parsed;
  for (const auto& [field, value] : document.items()) {
    if (field == "keys") {
      if (!value.is_array() || value.empty() || value.size() > kMaxKeys)
        throw std::invalid_argument("`keys` must list 1 to 8 keys, the signing one first");
      for (const auto& key : value) {
        if (!key.is_string() || key.get<std::string>().size() < kMinKeyBytes)
          throw std::invalid_argument("each of `keys` must be a string of at least 32 characters (e.g. `openssl rand -hex 32`)");
        parsed.keys.push_back(key.get<std::string>());
      }
    } else if (field == "trustUntaggedJobsCreatedBefore") {
      auto time = value.is_string() ? parseRfc3339OrNone(value.get<std::string>()) : std::nullopt;
      if (!time) throw std::invalid_argument("`trustUntaggedJobsCreatedBefore` must be an RFC 3339 time such as 2026-12-07T01:00:00Z");
      parsed.trustUntaggedJobsCreatedBefore = time;
    } else {
      throw std::invalid_argument("unknown field `" + field.substr(0, 64) + "` (known: keys, trustUntaggedJobsCreatedBefore)");
    }
  }
  if (parsed.keys.empty()) throw std::invalid_argument("the ownership key file lists no `keys`");
  return parsed;
}

JobOwnership::JobOwnership(std::string clusterId, OwnershipKeys keys) : clusterId_(std::move(clusterId)), keys_(std::move(keys)) {
  if (clusterId_.empty() || !isValidGcpLabelValue(clusterId_))
    throw std::invalid_argument("cluster id \"" + clusterId_.substr(0, 64) +
                                "\" must be 1 to 63 lowercase letters, digits, '_' or '-' (a Google Cloud label value)");
}

std::string JobOwnership::tagOf(const std::string& key, const std::map<std::string, std::string>& labels) const {
  // Every field that decides what the job counts for, each on its own line (no value holds a newline:
  // they are label values).
  std::string message = "vto-owner/v1\n" + clusterId_;
  for (const char* field : {crd::kRunUidLabel, crd::kAttemptLabel, crd::kNamespaceLabel, crd::kNameLabel, crd::kTeamLabel,
                            crd::kAcceleratorsLabel, crd::kAcceleratorTypeLabel}) {
    message += '\n';
    message += labelOf(labels, field);
  }
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()), reinterpret_cast<const unsigned char*>(message.data()),
           message.size(), digest, &length) == nullptr)
    throw std::runtime_error("HMAC-SHA256 failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string tag;
  for (unsigned int i = 0; i < length && tag.size() < kTagHexDigits; ++i) {
    tag += kHex[digest[i] >> 4];
    tag += kHex[digest[i] & 0xf];
  }
  return tag;
}

void JobOwnership::sign(std::map<std::string, std::string>& labels) const {
  labels[kClusterLabel] = clusterId_;
  labels.erase(kOwnerTagLabel);
  if (signs()) labels[kOwnerTagLabel] = tagOf(keys_.keys.front(), labels);
}

JobOwner JobOwnership::ownerOf(const std::map<std::string, std::string>& labels,
                               std::optional<Clock::time_point> createTime) const {
  auto cluster = labels.find(kClusterLabel);
  auto tag = labels.find(kOwnerTagLabel);
  if (cluster == labels.end()) {
    if (tag != labels.end()) return JobOwner::Forged;  // vto never writes one without the other
    if (!signs()) return JobOwner::Legacy;
    const auto& before = keys_.trustUntaggedJobsCreatedBefore;
    return before && createTime && *createTime < *before ? JobOwner::Legacy : JobOwner::Forged;
  }
  if (cluster->second != clusterId_) return JobOwner::OtherCluster;
  if (!signs()) return JobOwner::Ours;
  if (tag == labels.end()) return JobOwner::Forged;
  for (const auto& key : keys_.keys) {
    if (equalInConstantTime(tag->second, tagOf(key, labels))) return JobOwner::Ours;
  }
  return JobOwner::Forged;
}

}  // namespace vto::reconcilers
