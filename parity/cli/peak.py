"""`parity peak`: the device's dense GEMM peak per dtype and where the number comes from."""
from __future__ import annotations

import json

import click

from parity.cli.options import SetupError
from parity.cli.params import Text


@click.command("peak")
@click.option("--device", "device_name", type=Text(),
              help="Device name to look up in parity's table (H200, H100 SXM/PCIe, A100) [default: this machine's "
                   "CUDA device, measured when the table lacks it].")
@click.option("--measure/--no-measure", default=True,
              help="Measure this machine's device when the table lacks it (never another device's name).")
@click.option("--json", "as_json", is_flag=True)
def peak_cmd(device_name, measure, as_json) -> None:
    """Dense peak TFLOP/s per dtype (datasheet table keyed by device name, else measured).

    Exit 2 when there is no number to give: a --device the table lacks (measuring here would time
    this machine's GPU under that name), or no CUDA device to query or measure."""
    from parity.timing.peak import TABLE, lookup, measured_peak, peak
    if device_name is not None:
        if lookup(device_name) is None:
            known = ", ".join(" ".join(needles) for needles, _, _ in TABLE)
            raise SetupError(f"--device {device_name}: not in parity's table ({known}); run `parity peak` without "
                             "--device on a machine with that GPU to measure it")
        info = peak(device_name)
    else:
        try:
            import cupy
            device_name = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)["name"].decode()
        except Exception as e:
            raise SetupError(f"no CUDA device to query ({e}); pass --device NAME")
        if lookup(device_name) is None and not measure:
            raise SetupError(f"{device_name} is not in parity's table; leave out --no-measure to measure it")

        def meas(dt):
            from parity.host.blas import CupyBlas
            return measured_peak(CupyBlas(), dt)
        try:
            info = peak(device_name, meas)
        except Exception as e:                   # (cuBLAS missing or failing: nothing measured)
            raise SetupError(f"cannot measure {device_name}: {type(e).__name__}: {e}")
    if as_json:
        click.echo(json.dumps(info, indent=1))
        return
    click.echo(f"{info['device']}")
    for dt, v in info["peaks"].items():
        click.echo(f"  {dt:5s} {v:8.1f} TFLOP/s")
    click.echo(f"  source: {info['source']}")


COMMANDS = [peak_cmd]
