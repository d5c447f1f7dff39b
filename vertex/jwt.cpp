#include "vertex/jwt.h"

#include <memory>
#include <stdexcept>
#include <vector>

#include <openssl/evp.h>
#include <openssl/pem.h>

#include "base/base64.h"

namespace vto::vertex {
namespace {

using KeyPtr = std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)>;
using DigestPtr = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;
using BioPtr = std::unique_ptr<BIO, decltype(&BIO_free)>;

KeyPtr readKey(const std::string& pem, bool isPrivate) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())), BIO_free);
  EVP_PKEY* key = isPrivate ? PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr)
                            : PEM_read_bio_PUBKEY(bio.get(), nullptr, nullptr, nullptr);
  return KeyPtr(key, EVP_PKEY_free);
}

}  // namespace

std::string signJwtRs256(const nlohmann::json& header, const nlohmann::json& claims, const std::string& privateKeyPem) {
  auto key = readKey(privateKeyPem, true);
  if (!key) {
    throw std::invalid_argument(
        "the service account key's private_key is not a readable PEM private key; download a new JSON key");
  }
  auto signingInput = base64UrlEncode(header.dump()) + "." + base64UrlEncode(claims.dump());
  DigestPtr context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  std::size_t length = 0;
  if (EVP_DigestSignInit(context.get(), nullptr, EVP_sha256(), nullptr, key.get()) != 1 ||
      EVP_DigestSign(context.get(), nullptr, &length,
                     reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size()) != 1) {
    throw std::invalid_argument("the service account key cannot sign with RS256; it must be an RSA key");
  }
  std::vector<unsigned char> signature(length);
  if (EVP_DigestSign(context.get(), signature.data(), &length,
                     reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size()) != 1) {
    throw std::invalid_argument("signing the JWT failed");
  }
  return signingInput + "." + base64UrlEncode(std::string_view(reinterpret_cast<char*>(signature.data()), length));
}

bool verifyJwtRs256(std::string_view jwt, const std::string& publicKeyPem) {
  auto lastDot = jwt.rfind('.');
  if (lastDot == std::string_view::npos) return false;
  auto key = readKey(publicKeyPem, false);
  if (!key) return false;
  std::string signature;
  try {
    signature = base64UrlDecode(jwt.substr(lastDot + 1));
  } catch (const std::invalid_argument&) {
    return false;
  }
  auto signingInput = jwt.substr(0, lastDot);
  DigestPtr context(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  return EVP_DigestVerifyInit(context.get(), nullptr, EVP_sha256(), nullptr, key.get()) == 1 &&
         EVP_DigestVerify(context.get(), reinterpret_cast<const unsigned char*>(signature.data()), signature.size(),
                          reinterpret_cast<const unsigned char*>(signingInput.data()), signingInput.size()) == 1;
}

}  // namespace vto::vertex
