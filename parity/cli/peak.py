"""`parity peak`: the device's dense GEMM peak per dtype and where the number comes from."""
from __future__ import annotations

import json

import click

from parity.cli.options import SetupError


@click.command("peak")
@click.option("--device", "device_name", help="Device name to look up (default: the current CUDA device).")
@click.option("--measure/--no-measure", default=True, help="Measure when the device is not in the table.")
@click.option("--json", "as_json", is_flag=True)
def peak_cmd(device_name, measure, as_json) -> None:
    """Dense peak TFLOP/s per dtype (datasheet table keyed by device name, else measured)."""
    from parity.timing.peak import measured_peak, peak
    blas = None
    if device_name is None:
        try:
            import cupy
            device_name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
        except Exception as e:
            raise SetupError(f"no CUDA device to query ({e}); pass --device NAME")
    meas = None
    if measure:
        def meas(dt):
            nonlocal blas
            if blas is None:
                from parity.host.blas import CupyBlas
                blas = CupyBlas()
            return measured_peak(blas, dt)
    info = peak(device_name, meas)
    if as_json:
        click.echo(json.dumps(info, indent=1))
        return
    click.echo(f"{info['device']}")
    for dt, v in info["peaks"].items():
        click.echo(f"  {dt:5s} {v:8.1f} TFLOP/s")
    click.echo(f"  source: {info['source']}")


COMMANDS = [peak_cmd]
