# Samsa: a Kafka broker in Python, as a container.
#
#   docker build --network=host -t samsa .
#   docker run --rm -p 9092:9092 samsa            # clients on the host use localhost:9092
#
# Configuration: KAFKA_* environment variables with Kafka's property names (see docker/entrypoint.sh
# and the README), e.g. -e KAFKA_NUM_PARTITIONS=3. Data: the /var/lib/samsa/data volume.
# The Spark connector is not needed here: Spark jobs bring their own (see docker-compose.yml).
#
# Two build stages install into the virtual environment /opt/samsa; the image gets only that
# environment (no copy of the source tree, no pip cache). Dependencies are installed from
# pyproject.toml alone, so a change to the code rebuilds only the last, small layer.
FROM python:3.11-slim AS deps
ENV PIP_NO_CACHE_DIR=1 PIP_DISABLE_PIP_VERSION_CHECK=1
COPY pyproject.toml /tmp/pyproject.toml
RUN python3 -m venv /opt/samsa \
 && python3 -c "import tomllib; print('\n'.join(tomllib.load(open('/tmp/pyproject.toml', 'rb'))['project']['dependencies']))" \
        > /tmp/requirements.txt \
 && /opt/samsa/bin/pip install -q -r /tmp/requirements.txt

FROM deps AS build
WORKDIR /src
COPY pyproject.toml README.md ./
COPY protocol ./protocol
COPY coordinator ./coordinator
COPY broker ./broker
COPY spark_jobs ./spark_jobs
RUN /opt/samsa/bin/pip install -q --no-deps . \
 && /opt/samsa/bin/pip uninstall -q -y pip setuptools \
 && /opt/samsa/bin/python -m compileall -q /opt/samsa/lib >/dev/null

FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PATH=/opt/samsa/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

RUN groupadd --system --gid 10001 samsa \
 && useradd --system --uid 10001 --gid samsa --home-dir /var/lib/samsa --shell /usr/sbin/nologin samsa \
 && mkdir -p /var/lib/samsa/data \
 && chown -R samsa:samsa /var/lib/samsa

COPY docker/entrypoint.sh /usr/local/bin/samsa-entrypoint
COPY --from=build /opt/samsa /opt/samsa
# Kafka's command-line tools where Kafka's image has them (docker exec samsa /opt/kafka/bin/kafka-topics.sh ...);
# kafka-topics and kafka-topics.sh are also on PATH (/opt/samsa/bin, console scripts of broker/tools/)
RUN mkdir -p /opt/kafka/bin \
 && for tool in kafka-topics kafka-console-producer kafka-console-consumer kafka-consumer-groups kafka-configs \
                kafka-get-offsets kafka-acls kafka-features kafka-transactions kafka-share-groups; do \
        ln -s /opt/samsa/bin/$tool.sh /opt/kafka/bin/$tool.sh; \
    done

USER samsa
WORKDIR /var/lib/samsa
ENV KAFKA_LISTENERS=PLAINTEXT://0.0.0.0:9092 \
    KAFKA_LOG_DIRS=/var/lib/samsa/data \
    KAFKA_SAMSA_HTTP_LISTENER=http://0.0.0.0:8090
VOLUME ["/var/lib/samsa/data"]
EXPOSE 9092 8090

# ApiVersions (+ Metadata) round trip with the broker's own first listener from KAFKA_LISTENERS
# (PLAINTEXT preferred, else SSL with the broker's key store, else SASL); SAMSA_BOOTSTRAP=HOST:PORT
# names a PLAINTEXT listener to ask instead.
HEALTHCHECK --interval=5s --timeout=5s --start-period=10s --retries=3 CMD ["samsa", "healthcheck"]

ENTRYPOINT ["samsa-entrypoint"]
CMD ["serve"]
