"""An earlier version's ``__security_metadata.jsonl`` (ACLs and SCRAM credentials kept beside
the logs) is migrated into the metadata log at start-up, once: a real broker started on such a
data dir enforces the old ACLs and accepts the old credentials, before and after a restart."""
from __future__ import annotations

import base64
import hashlib
import hmac
import json

from tests.support.security_support import SecureBroker, scram_login, topic_error_as

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required username="admin" password="admin-secret" '
        'user_admin="admin-secret" user_bob="bob-secret";')


def _old_scram_line(name: str, password: str, iterations: int = 4096) -> dict:
    salt = b"0123456789abcdef"
    salted = hashlib.pbkdf2_hmac("sha512", password.encode(), salt, iterations)
    client_key = hmac.new(salted, b"Client Key", hashlib.sha512).digest()
    enc = lambda b: base64.b64encode(b).decode()  # noqa: E731
    return {"type": "UserScramCredentialRecord", "name": name, "mechanism": 2, "salt": enc(salt),
            "storedKey": enc(hashlib.sha512(client_key).digest()),
            "serverKey": enc(hmac.new(salted, b"Server Key", hashlib.sha512).digest()), "iterations": iterations}


def test_old_security_file_is_migrated(tmp_path) -> None:
    data = tmp_path / "data"
    data.mkdir()
    acl = lambda i, topic: {"type": "AccessControlEntryRecord", "id": i, "resourceType": 2,  # noqa: E731
                            "resourceName": topic, "patternType": 3, "principal": "User:bob", "host": "*",
                            "operation": 4, "permissionType": 3}
    lines = [acl("a", "kept"), acl("b", "removed"), {"type": "RemoveAccessControlEntryRecord", "id": "b"},
             _old_scram_line("carol", "carol-pw")]
    (data / "__security_metadata.jsonl").write_text("".join(json.dumps(l) + "\n" for l in lines))
    b = SecureBroker(data, ["SASL_PLAINTEXT"], {
        "authorizer.class.name": "org.apache.kafka.metadata.authorizer.StandardAuthorizer",
        "super.users": "User:admin;User:ANONYMOUS", "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS})
    b.start()
    try:
        b.create_topic("kept")
        b.create_topic("removed")
        for attempt in range(2):   # as migrated, then after a restart (from the metadata log alone)
            sasl = b.bootstrap("SASL_PLAINTEXT")
            assert topic_error_as(sasl, "bob", "kept") == 0
            assert topic_error_as(sasl, "bob", "removed") == 29   # TOPIC_AUTHORIZATION_FAILED
            assert scram_login(sasl, "carol", "carol-pw") == 0
            assert scram_login(sasl, "carol", "nope") == 58
            assert not (data / "__security_metadata.jsonl").exists()
            assert (data / "__security_metadata.jsonl.migrated").exists()
            assert b"carol" in (data / "__samsa_metadata.log").read_bytes()
            if attempt == 0:
                b.restart()
    finally:
        b.stop()
