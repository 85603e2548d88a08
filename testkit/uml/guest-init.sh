#!/bin/bash
# PID 1 of a user-mode-linux test guest (testkit/uml/guest.ts boots it; docs/data-path-tests.md). The guest's
# root is the host's / through hostfs, read-write: everything the guest's daemons write goes to tmpfs mounted
# here, and only the spool directory the host made is written through to the host.
#
# Parameters come from the kernel command line (unknown key=value arguments reach init as environment):
#   cstor_name cstor_ip cstor_spool cstor_scratch cstor_modroot cstor_iqn cstor_repl_tmo
#
# Every fork/exec in the guest costs 0.1-0.5 s on a slow host, so this script runs few external commands and
# its idle loop none at all (bash builtins only).
export PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root
here=${BASH_SOURCE[0]%/*}
mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t tmpfs -o mode=755,size=64m tmpfs /run # /var/run and /var/lock point here
mount -t tmpfs -o size=8m tmpfs /etc/iscsi     # iscsiadm's node records, the initiator name
mount -t tmpfs -o size=8m tmpfs /etc/mdadm     # no host mdadm.conf: nothing assembles by itself
mount -t tmpfs -o size=8m tmpfs /var/log       # poweroff writes a wtmp record
mount -t tmpfs -o size=64m tmpfs "$cstor_scratch"
mkdir -p /run/lock /run/mdadm
echo "$cstor_name" >/proc/sys/kernel/hostname

echo "InitiatorName=$cstor_iqn" >/etc/iscsi/initiatorname.iscsi
# A leg whose replica is gone must fail quickly, so md drops it and writes continue on the others.
cat >/etc/iscsi/iscsid.conf <<CONF
iscsid.startup = /bin/true
node.startup = manual
node.session.timeo.replacement_timeout = ${cstor_repl_tmo:-5}
node.conn[0].timeo.login_timeout = 5
node.conn[0].timeo.logout_timeout = 5
node.conn[0].timeo.noop_out_interval = 2
node.conn[0].timeo.noop_out_timeout = 2
node.session.initial_login_retry_max = 2
node.session.iscsi.InitialR2T = No
node.session.iscsi.ImmediateData = Yes
node.session.cmds_max = 128
node.session.queue_depth = 32
CONF
printf 'DEVICE /dev/null\nHOMEHOST <none>\n' >/etc/mdadm/mdadm.conf

# The kernel's own module requests (LIO asks for its backstores) go through the wrapper, which adds -d.
echo "$cstor_modroot" >/run/cstor-modroot
echo "$here/guest-modprobe.sh" >/proc/sys/kernel/modprobe
# sd_mod: without it iSCSI LUNs attach but no /dev/sdX appears. One exec for all modules.
modprobe -a -d "$cstor_modroot" sd_mod md-mod raid1 iscsi_tcp configfs target_core_mod \
	target_core_iblock iscsi_target_mod || echo "guest-init: modprobe failed" >&2
mount -t configfs configfs /sys/kernel/config
ip -batch - <<NET
link set lo up
addr add $cstor_ip/24 dev vec0
link set vec0 up
NET
iscsid || echo "guest-init: iscsid failed" >&2

# `read -t` on a fifo nobody writes is a sleep without a fork.
mkfifo /run/sleep.fifo
exec 9<>/run/sleep.fifo
S=$cstor_spool
read -r up _ </proc/uptime
echo "$cstor_name ready at uptime $up" >"$S/ready.tmp"
mv "$S/ready.tmp" "$S/ready"
cd "$cstor_scratch" || exit 1

# The spool: the host writes cmd/N.sh (N = 000001, 000002, ... in order; written as .tmp, then renamed), whose
# first line is "#timeout SECONDS". It runs under timeout(1) (cwd: guest tmpfs), its output goes to out/N.out
# and out/N.err, then its exit code and a newline to out/N.rc. hostfs writes go through to the host at once.
n=1
while [[ ! -e $S/poweroff ]]; do
	printf -v id '%06d' "$n"
	if [[ -e $S/cmd/$id.sh ]]; then
		t=60
		read -r _ t <"$S/cmd/$id.sh"
		timeout -k 2 "$t" bash "$S/cmd/$id.sh" >"$S/out/$id.out" 2>"$S/out/$id.err" </dev/null
		echo $? >"$S/out/$id.rc"
		n=$((n + 1))
	else
		read -r -t 0.05 -u 9 _
	fi
done

# Shutdown order matters: md first, then the iSCSI sessions (a logout under a running array fails its legs
# and writes their superblocks as faulty).
mdadm --stop --scan >/dev/null 2>&1
iscsiadm -m session -u >/dev/null 2>&1
sync
echo "$cstor_name powering off" >"$S/down"
exec busybox poweroff -f # /sbin/poweroff is systemctl's; sysrq 'o' returns first and init's exit panics
