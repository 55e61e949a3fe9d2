# hermitcrab in a container: `hermitcrab run` as the unprivileged user `hermitcrab`, its home on a volume.
#
#   docker build -t hermitcrab .
#   docker run -d --name hermitcrab --restart unless-stopped -e OPENAI_API_KEY \
#     -v hermitcrab:/home/hermitcrab/.hermitcrab -p 127.0.0.1:8787:8787 hermitcrab
#
# Without the browser server (no Chromium, no Playwright; then set `disabled = true` on browser in config.toml):
#   docker build --build-arg EXTRAS=memory,exec,cron,spawn,discord --build-arg CHROMIUM= -t hermitcrab:slim .
#
# Debian throughout: its Python 3.11 and its Chromium come from the same archive, and so do their updates.

FROM debian:bookworm-slim AS build
ARG EXTRAS=all
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md /src/
COPY host /src/host
COPY install /src/install
COPY util /src/util
COPY servers /src/servers
COPY channels /src/channels
COPY dashboard /src/dashboard
COPY workspace /src/workspace
RUN python3 -m venv /opt/hermitcrab \
    && /opt/hermitcrab/bin/pip install --no-cache-dir "/src[${EXTRAS}]"

FROM debian:bookworm-slim
ARG CHROMIUM=chromium
# tini reaps the orphans that commands and browsers leave behind (Python as PID 1 would not); chromium is the browser
# server's browser and libatomic1 what Playwright's bundled node needs to drive it; bubblewrap sandboxes exec's
# commands where the runtime allows user namespaces.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 ca-certificates tini bubblewrap libatomic1 ${CHROMIUM} \
    && rm -rf /var/lib/apt/lists/*
COPY --from=build /opt/hermitcrab /opt/hermitcrab
RUN useradd --create-home --uid 1000 hermitcrab \
    && install -d -o hermitcrab -g hermitcrab /home/hermitcrab/.hermitcrab
ENV PATH=/opt/hermitcrab/bin:$PATH \
    HERMITCRAB_HOME=/home/hermitcrab/.hermitcrab \
    HERMITCRAB_WEBHOOK_LISTEN=0.0.0.0:8787 \
    PYTHONUNBUFFERED=1
USER hermitcrab
WORKDIR /home/hermitcrab
VOLUME /home/hermitcrab/.hermitcrab
EXPOSE 8787
# The webhook's /healthz answers while `run` serves; the webhook runs whenever config.toml has a token (init writes one).
HEALTHCHECK --interval=60s --timeout=5s --start-period=120s \
    CMD python -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:8787/healthz', timeout=4)"
ENTRYPOINT ["tini", "--"]
# init creates the home on the first start and keeps everything after; exec hands stop signals straight to `run`.
CMD ["sh", "-c", "hermitcrab init >/dev/null && exec hermitcrab run"]
