# The Yardstick image: web, worker and beat in docker-compose.yml all run it.
# (/app/var/metrics exists in the image so that the metrics volume mounted there belongs to the user.)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app \
    NUMBA_CACHE_DIR=/app/var/numba

WORKDIR /app
COPY . /app

# `pip install .` brings the dependencies of pyproject.toml. The code itself runs from /app
# (PYTHONPATH), where manage.py, templates/ and static/ are, so that BASE_DIR is /app.
# The annotators' catalogs (locale/) are compiled with gettext's msgfmt, which leaves the image after.
# The metrics kernels are compiled at the build into numba's cache (NUMBA_CACHE_DIR, owned by the
# user): a worker process then loads them as it starts (config/celery.py) instead of compiling them
# (numba compiles again only on a CPU other than the build's).
RUN pip install . \
    && rm -rf build *.egg-info \
    && apt-get update \
    && apt-get install -y --no-install-recommends gettext \
    && python manage.py compilemessages \
    && apt-get purge -y gettext && apt-get autoremove -y && rm -rf /var/lib/apt/lists/* \
    && useradd --system --create-home --uid 10001 yardstick \
    && mkdir -p /app/var/metrics /app/staticfiles \
    && python -c "import metrics.kernels as kernels; kernels.compile_all()" \
    && chown -R yardstick:yardstick /app/var /app/staticfiles

USER yardstick
EXPOSE 8000
CMD ["gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"]
