# Samsa: a Kafka broker in Python, as a container.
#
#   docker build -t samsa .
#   docker run --rm -p 9092:9092 samsa            # clients on the host use localhost:9092
#
# Configuration: KAFKA_* environment variables with Kafka's property names (see docker/entrypoint.sh
# and the README), e.g. -e KAFKA_NUM_PARTITIONS=3. Data: the /var/lib/samsa/data volume.
# The Spark connector is not needed here: Spark jobs bring their own (see docker-compose.yml).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN groupadd --system --gid 10001 samsa \
 && useradd --system --uid 10001 --gid samsa --home-dir /var/lib/samsa --shell /usr/sbin/nologin samsa \
 && mkdir -p /var/lib/samsa/data \
 && chown -R samsa:samsa /var/lib/samsa

WORKDIR /opt/samsa
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY coordinator ./coordinator
COPY broker ./broker
COPY spark_jobs ./spark_jobs
RUN pip install . && rm -rf build *.egg-info

COPY docker/entrypoint.sh /usr/local/bin/samsa-entrypoint

USER samsa
WORKDIR /var/lib/samsa
ENV KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKA_LOG_DIRS=/var/lib/samsa/data \
    SAMSA_BOOTSTRAP=127.0.0.1:9092 \
    KAFKA_SAMSA_HTTP_LISTENER=http://0.0.0.0:8090
VOLUME ["/var/lib/samsa/data"]
EXPOSE 9092 8090

# ApiVersions round trip; SAMSA_BOOTSTRAP names the listener to ask when 9092 is not one.
HEALTHCHECK --interval=10s --timeout=5s --start-period=10s --retries=3 CMD ["samsa", "healthcheck"]

ENTRYPOINT ["samsa-entrypoint"]
CMD ["serve"]
