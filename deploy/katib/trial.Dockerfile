# The trial image of deploy/katib/experiment.yaml: Python with scikit-learn, pandas and metaopt's
# Python package. From the repository root:
#   docker build -f deploy/katib/trial.Dockerfile -t registry.example.com/metaopt-sklearn-trial:0.1.0 .
FROM python:3.11-slim
COPY clients/python /src/metaopt-python
RUN pip install --no-cache-dir scikit-learn pandas /src/metaopt-python
