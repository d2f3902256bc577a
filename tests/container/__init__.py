"""Container tier: the image and the compose files: build the image, run it as the README shows,
health checks, read-only root, security settings, a compose cluster and Spark under compose. Needs
a Docker daemon; without one those tests skip with the reason (test_container.py checks the
entrypoint and packaging without a container engine and always runs). Building the image takes
minutes the first time; ``-m container`` or ``-m "not container"``."""
