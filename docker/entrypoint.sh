#!/bin/sh
# Samsa container entrypoint.
#
# Configuration comes from KAFKA_* environment variables with Kafka's property names
# (KAFKA_ADVERTISED_LISTENERS -> advertised.listeners); this script only supplies the defaults of a
# single-node broker in a container, so `docker run -p 9092:9092 samsa` just works:
#   KAFKA_LISTENERS   PLAINTEXT://0.0.0.0:9092  (every interface of the container)
#   KAFKA_LOG_DIRS    /var/lib/samsa/data       (the image's VOLUME)
# Without KAFKA_ADVERTISED_LISTENERS the broker advertises its listeners, 0.0.0.0 as localhost,
# which is right for clients on the host of a `-p 9092:9092` container.
# `samsa serve` without --config also starts with Kafka's quick-start settings, as the apache/kafka
# image does (group.initial.rebalance.delay.ms=0; broker/common/config.py QUICK_START_PROPERTIES).
# Arguments: none or options (-...) run `samsa serve [options]`; `serve`/`healthcheck` run that
# samsa command; anything else is executed as given (e.g. `python -m spark_jobs.sample_events`).
set -eu

: "${KAFKA_LISTENERS:=PLAINTEXT://0.0.0.0:9092}"
: "${KAFKA_LOG_DIRS:=/var/lib/samsa/data}"
export KAFKA_LISTENERS KAFKA_LOG_DIRS

SAMSA=${SAMSA_BIN:-samsa}

if [ "$#" -eq 0 ]; then
    set -- serve
fi
case "$1" in
    -*)
        set -- serve "$@"
        ;;
esac

case "$1" in
    serve)
        # Fail early and clearly when the data volume is not writable (e.g. a host folder owned by
        # another user), instead of a stack trace from deep inside the log manager.
        data_dir=${KAFKA_LOG_DIRS%%,*}
        mkdir -p "$data_dir" 2>/dev/null || true
        if [ ! -w "$data_dir" ]; then
            echo "samsa: data folder $data_dir is not writable by uid $(id -u); fix the volume's owner or set KAFKA_LOG_DIRS" >&2
            exit 1
        fi
        exec "$SAMSA" "$@"
        ;;
    healthcheck)
        exec "$SAMSA" "$@"
        ;;
    *)
        exec "$@"
        ;;
esac
