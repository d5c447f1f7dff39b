#pragma once
// An RSA key pair generated when the test runs, so no private key is ever checked in.
#include <memory>
#include <stdexcept>
#include <string>

#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>

namespace vto::testing {

struct TestKeyPair {
  std::string privatePem;
  std::string publicPem;
};

inline TestKeyPair generateRsaKeyPair() {
  std::unique_ptr<EVP_PKEY, decltype(&EVP_PKEY_free)> key(EVP_RSA_gen(2048), EVP_PKEY_free);
  if (!key) throw std::runtime_error("RSA key generation failed");
  auto toPem = [&](bool isPrivate) {
    std::unique_ptr<BIO, decltype(&BIO_free)> bio(BIO_new(BIO_s_mem()), BIO_free);
    if (isPrivate) {
      PEM_write_bio_PrivateKey(bio.get(), key.get(), nullptr, nullptr, 0, nullptr, nullptr);
    } else {
      PEM_write_bio_PUBKEY(bio.get(), key.get());
    }
    char* data = nullptr;
    auto length = BIO_get_mem_data(bio.get(), &data);
    return std::string(data, static_cast<std::size_t>(length));
  };
  return {toPem(true), toPem(false)};
}

}  // namespace vto::testing
