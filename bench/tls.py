"""Certificates made at run time (the ``cryptography`` package) and a Samsa broker with several
listeners (PLAINTEXT for the health check, plus SSL / SASL_PLAINTEXT / SASL_SSL), for the TLS
benchmark (bench/tls_cost.py) and the security tests (through tests/support/security_support.py;
bench never imports tests)."""
from __future__ import annotations

import datetime
import ipaddress
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from broker.testing import SamsaBroker, free_port


def _name(**attrs: str) -> x509.Name:
    oids = {"CN": NameOID.COMMON_NAME, "OU": NameOID.ORGANIZATIONAL_UNIT_NAME, "O": NameOID.ORGANIZATION_NAME,
            "C": NameOID.COUNTRY_NAME}
    return x509.Name([x509.NameAttribute(oids[k], v) for k, v in attrs.items()])


def _pem_key(key) -> bytes:
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                             serialization.NoEncryption())


def _cert(subject: x509.Name, key, issuer: x509.Name, issuer_key, ca: bool = False,
          server: bool = False) -> x509.Certificate:
    now = datetime.datetime.now(datetime.timezone.utc)
    b = (x509.CertificateBuilder().subject_name(subject).issuer_name(issuer).public_key(key.public_key())
         .serial_number(x509.random_serial_number()).not_valid_before(now - datetime.timedelta(minutes=5))
         .not_valid_after(now + datetime.timedelta(days=1))
         .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if server:
        b = b.add_extension(x509.SubjectAlternativeName([x509.DNSName("localhost"),
                                                         x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                            critical=False)
    return b.sign(issuer_key, hashes.SHA256())


@dataclass
class Pki:
    dir: Path
    ca: Path            # CA certificate (PEM): the trust store of clients and broker
    server_cert: Path   # server chain (PEM)
    server_key: Path
    server_pem: Path    # key + chain in one PEM file (ssl.keystore.location with type PEM)
    client_cert: Path   # CN=alice,OU=eng,O=samsa signed by the CA
    client_key: Path
    other_ca: Path      # a CA nobody trusts
    rogue_cert: Path    # a client certificate signed by other_ca
    rogue_key: Path


def make_pki(directory: Path) -> Pki:
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = _name(CN="samsa-test-ca")
    ca = _cert(ca_name, ca_key, ca_name, ca_key, ca=True)
    other_key = ec.generate_private_key(ec.SECP256R1())
    other_name = _name(CN="untrusted-ca")
    other = _cert(other_name, other_key, other_name, other_key, ca=True)
    skey = ec.generate_private_key(ec.SECP256R1())
    scert = _cert(_name(CN="localhost"), skey, ca_name, ca_key, server=True)
    ckey = ec.generate_private_key(ec.SECP256R1())
    ccert = _cert(_name(C="US", O="samsa", OU="eng", CN="alice"), ckey, ca_name, ca_key)
    rkey = ec.generate_private_key(ec.SECP256R1())
    rcert = _cert(_name(CN="mallory"), rkey, other_name, other_key)
    pem = lambda c: c.public_bytes(serialization.Encoding.PEM)  # noqa: E731
    files = {"ca": pem(ca), "server_cert": pem(scert), "server_key": _pem_key(skey),
             "server_pem": _pem_key(skey) + pem(scert), "client_cert": pem(ccert), "client_key": _pem_key(ckey),
             "other_ca": pem(other), "rogue_cert": pem(rcert), "rogue_key": _pem_key(rkey)}
    paths = {}
    for name, data in files.items():
        p = directory / f"{name}.pem"
        p.write_bytes(data)
        paths[name] = p
    return Pki(directory, **paths)


class SecureBroker(SamsaBroker):
    """A broker with a PLAINTEXT listener (for the health check) plus named secure listeners:
    ``ports["SSL"]``, ``ports["SASL_SSL"]``..."""

    def __init__(self, data_dir, protocols: list[str], overrides: dict[str, str] | None = None) -> None:
        super().__init__(data_dir)
        self.ports = {p: free_port() for p in protocols}
        listeners = ",".join([f"PLAINTEXT://127.0.0.1:{self.port}"] +
                             [f"{p}://127.0.0.1:{port}" for p, port in self.ports.items()])
        self.overrides = {"listeners": listeners, "advertised.listeners": listeners, **(overrides or {})}

    def bootstrap(self, protocol: str) -> str:
        return f"127.0.0.1:{self.ports[protocol]}"


def tls_overrides(pki: Pki, client_auth: str = "none") -> dict[str, str]:
    return {"ssl.keystore.type": "PEM", "ssl.keystore.location": str(pki.server_pem),
            "ssl.truststore.type": "PEM", "ssl.truststore.location": str(pki.ca),
            "ssl.client.auth": client_auth}
