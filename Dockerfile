# The Yardstick image: web, worker and beat in docker-compose.yml all run it.
# (/app/var/metrics exists in the image so that the metrics volume mounted there belongs to the user.)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    PYTHONPATH=/app

WORKDIR /app
COPY . /app

# `pip install .` brings the dependencies of pyproject.toml. The code itself runs from /app
# (PYTHONPATH), where manage.py, templates/ and static/ are, so that BASE_DIR is /app.
RUN pip install . \
    && rm -rf build *.egg-info \
    && useradd --system --create-home --uid 10001 yardstick \
    && mkdir -p /app/var/metrics /app/staticfiles \
    && chown yardstick:yardstick /app/var /app/var/metrics /app/staticfiles

USER yardstick
EXPOSE 8000
CMD ["gunicorn", "-c", "config/gunicorn.conf.py", "config.wsgi"]
