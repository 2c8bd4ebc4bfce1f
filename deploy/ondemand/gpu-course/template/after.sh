# Sourced by OnDemand's job script after script.sh was started: the session is
# shown as ready only once JupyterLab listens.
echo "Waiting for JupyterLab to listen on ${host}:${port}..."
if ! wait_until_port_used "${host}:${port}" 300; then
    echo "JupyterLab did not start within 300 seconds" >&2
    clean_up 1
fi
echo "JupyterLab listens on ${host}:${port}"
