"""The official Kafka images' way of naming TLS stores: ``KAFKA_SSL_KEYSTORE_FILENAME`` and
``KAFKA_SSL_*_CREDENTIALS`` name files in ``/etc/kafka/secrets`` (the store, and one file per
password), instead of ``ssl.keystore.location``/``ssl.keystore.password`` themselves. The
apache/kafka image's start-up script turns them into those properties; Samsa does the same when
it reads its ``KAFKA_*`` environment, so ``samsa serve`` and ``samsa healthcheck`` (which does
not run through the entrypoint) see the same stores. Explicit ``KAFKA_SSL_*_LOCATION`` /
``_PASSWORD`` variables win."""
from __future__ import annotations

import os
from collections.abc import Mapping

SECRETS_DIR = "/etc/kafka/secrets"
# variable -> (property, what the named file holds)
_STORE_FILES = {"KAFKA_SSL_KEYSTORE_FILENAME": "ssl.keystore.location",
                "KAFKA_SSL_TRUSTSTORE_FILENAME": "ssl.truststore.location"}
_PASSWORD_FILES = {"KAFKA_SSL_KEYSTORE_CREDENTIALS": "ssl.keystore.password",
                   "KAFKA_SSL_KEY_CREDENTIALS": "ssl.key.password",
                   "KAFKA_SSL_TRUSTSTORE_CREDENTIALS": "ssl.truststore.password"}


class SecretFileError(ValueError):
    """A credentials file the environment names cannot be read (the broker refuses to start)."""


def secret_file_properties(environ: Mapping[str, str], secrets_dir: str = SECRETS_DIR) -> dict[str, str]:
    """The properties these variables stand for: store locations, and passwords read from their
    files (trailing newlines dropped, as the image's ``$(cat file)`` does)."""
    props: dict[str, str] = {}
    for var, prop in _STORE_FILES.items():
        if environ.get(var):
            props[prop] = os.path.join(secrets_dir, environ[var])
    for var, prop in _PASSWORD_FILES.items():
        if environ.get(var):
            path = os.path.join(secrets_dir, environ[var])
            try:
                with open(path, encoding="utf-8") as f:
                    props[prop] = f.read().rstrip("\n")
            except OSError as exc:
                raise SecretFileError(f"{var}: cannot read {path}: {exc.strerror}") from None
    return props
