// Test-only helpers (header-only, OpenSSL) that write TLS certificates at test time: a
// self-signed certificate, and a private CA with a server certificate it signed, so tests
// check TLS serving and certificate verification without key files in the repository.
// Thread-safe as long as each caller writes into its own directory (TempDir).
#pragma once

#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>

namespace weft::net::testtls {

// A fresh directory under /tmp, removed when the object goes away.
class TempDir {
 public:
  TempDir() {
    char dir_template[] = "/tmp/weft_net_test_XXXXXX";
    if (mkdtemp(dir_template) != nullptr) path_ = dir_template;
    EXPECT_FALSE(path_.empty());
  }
  ~TempDir() {
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

inline void WritePem(const std::string& path, EVP_PKEY* key, X509* cert) {
  FILE* f = fopen(path.c_str(), "w");
  ASSERT_NE(f, nullptr) << path;
  if (key != nullptr) {
    EXPECT_EQ(PEM_write_PrivateKey(f, key, nullptr, nullptr, 0, nullptr, nullptr), 1);
  }
  if (cert != nullptr) {
    EXPECT_EQ(PEM_write_X509(f, cert), 1);
  }
  fclose(f);
}

// A v3 certificate for `cn`, valid for an hour, not yet signed.
inline X509* NewCert(EVP_PKEY* key, const char* cn, long serial) {
  X509* cert = X509_new();
  X509_set_version(cert, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert), serial);
  X509_gmtime_adj(X509_getm_notBefore(cert), -60);
  X509_gmtime_adj(X509_getm_notAfter(cert), 3600);
  X509_set_pubkey(cert, key);
  X509_NAME_add_entry_by_txt(X509_get_subject_name(cert), "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn), -1, -1, 0);
  return cert;
}

inline void AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// Writes a self-signed P-256 certificate for CN=localhost (no subjectAltName).
inline void WriteSelfSignedCert(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  X509* cert = NewCert(key, "localhost", 1);
  X509_set_issuer_name(cert, X509_get_subject_name(cert));
  ASSERT_GT(X509_sign(cert, key, EVP_sha256()), 0);
  WritePem(key_path, key, nullptr);
  WritePem(cert_path, nullptr, cert);
  X509_free(cert);
  EVP_PKEY_free(key);
}

struct CaSignedCert {
  std::string ca_file;    // the CA certificate (PEM) a client trusts
  std::string cert_file;  // the server's certificate (PEM)
  std::string key_file;   // the server's private key (PEM)
};

// Writes a private CA and a server certificate it signed for `subject_alt_names` (OpenSSL
// syntax: "DNS:localhost,IP:127.0.0.1") into `dir`.
inline CaSignedCert WriteCaSignedCert(const std::string& dir, const char* subject_alt_names) {
  CaSignedCert out{dir + "/ca.pem", dir + "/cert.pem", dir + "/key.pem"};
  EVP_PKEY* ca_key = EVP_EC_gen("P-256");
  EVP_PKEY* key = EVP_EC_gen("P-256");
  EXPECT_NE(ca_key, nullptr);
  EXPECT_NE(key, nullptr);
  X509* ca = NewCert(ca_key, "weft test CA", 1);
  X509_set_issuer_name(ca, X509_get_subject_name(ca));
  AddExtension(ca, ca, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign");
  EXPECT_GT(X509_sign(ca, ca_key, EVP_sha256()), 0);

  X509* cert = NewCert(key, "weft test server", 2);
  X509_set_issuer_name(cert, X509_get_subject_name(ca));
  AddExtension(cert, ca, NID_subject_alt_name, subject_alt_names);
  EXPECT_GT(X509_sign(cert, ca_key, EVP_sha256()), 0);

  WritePem(out.ca_file, nullptr, ca);
  WritePem(out.cert_file, nullptr, cert);
  WritePem(out.key_file, key, nullptr);
  X509_free(cert);
  X509_free(ca);
  EVP_PKEY_free(key);
  EVP_PKEY_free(ca_key);
  return out;
}

}  // namespace weft::net::testtls
