"""Throwaway TLS material for tests: a CA and a server certificate it signs, for the names given.

Made with the `cryptography` package when it is installed, else with the openssl CLI; `tls_material()` skips the
test when neither is there. Keys are EC P-256 (fast to make).
"""
from __future__ import annotations

import ipaddress
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest


@dataclass(frozen=True)
class TlsFiles:
    ca: Path  # the CA certificate agents trust
    cert: Path  # the server's certificate, signed by the CA
    key: Path  # the server's private key


def _names(names: list[str]):
    from cryptography import x509

    out = []
    for name in names:
        try:
            out.append(x509.IPAddress(ipaddress.ip_address(name)))
        except ValueError:
            out.append(x509.DNSName(name))
    return out


def _with_cryptography(directory: Path, names: list[str]) -> TlsFiles:
    import datetime

    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    now = datetime.datetime.now(datetime.UTC)

    def build(subject: str, issuer: str, public_key, signing_key, ca: bool, sans=None):
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)]))
                   .issuer_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, issuer)]))
                   .public_key(public_key).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
        if sans:
            builder = builder.add_extension(x509.SubjectAlternativeName(sans), critical=False)
        return builder.sign(signing_key, hashes.SHA256())

    ca_key, server_key = ec.generate_private_key(ec.SECP256R1()), ec.generate_private_key(ec.SECP256R1())
    ca_cert = build("tunefarm test CA", "tunefarm test CA", ca_key.public_key(), ca_key, True)
    server_cert = build(names[0], "tunefarm test CA", server_key.public_key(), ca_key, False, _names(names))
    files = TlsFiles(directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
    files.ca.write_bytes(ca_cert.public_bytes(serialization.Encoding.PEM))
    files.cert.write_bytes(server_cert.public_bytes(serialization.Encoding.PEM))
    files.key.write_bytes(server_key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                   serialization.NoEncryption()))
    return files


def _with_openssl(directory: Path, names: list[str]) -> TlsFiles:
    files = TlsFiles(directory / "ca.pem", directory / "cert.pem", directory / "key.pem")
    ca_key, csr, ext = directory / "ca-key.pem", directory / "server.csr", directory / "san.ext"
    sans = ",".join(f"IP:{n}" if n.replace(".", "").isdigit() else f"DNS:{n}" for n in names)
    ext.write_text(f"subjectAltName={sans}\nbasicConstraints=critical,CA:FALSE\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for cmd in (["openssl", "req", "-x509", *ec, "-days", "1", "-subj", "/CN=tunefarm test CA", "-keyout",
                 str(ca_key), "-out", str(files.ca)],
                ["openssl", "req", *ec, "-subj", f"/CN={names[0]}", "-keyout", str(files.key), "-out", str(csr)],
                ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(files.ca), "-CAkey", str(ca_key),
                 "-CAcreateserial", "-days", "1", "-extfile", str(ext), "-out", str(files.cert)]):
        subprocess.run(cmd, check=True, capture_output=True, timeout=60)
    return files


def tls_material(directory: Path, names: list[str]) -> TlsFiles:
    """A CA, and a server certificate and key for `names` (DNS names or IP addresses; the first is its CN)."""
    directory.mkdir(parents=True, exist_ok=True)
    try:
        import cryptography  # noqa: F401
    except ImportError:
        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor the openssl CLI is installed")
        return _with_openssl(directory, names)
    return _with_cryptography(directory, names)
