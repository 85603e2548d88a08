# Helpers for the command snippets a test runs in a UML guest (testkit/uml/guest.ts sources this file before
# each one). Keep them fork-free where a loop polls: every exec costs 0.1-0.5 s in the guest.

# gsleep SECONDS: sleep without a fork (fd 9 is the fifo guest-init.sh opened).
gsleep() { read -r -t "$1" -u 9 _ 2>/dev/null || true; }

# iscsi_login IQN IP:PORT USER PASSWORD: a node record with manual startup and CHAP, then log in.
iscsi_login() {
	iscsiadm -m node -o new -T "$1" -p "$2" >/dev/null || return 1
	iscsiadm -m node -T "$1" -p "$2" -o update \
		-n node.session.auth.authmethod -v CHAP \
		-n node.session.auth.username -v "$3" \
		-n node.session.auth.password -v "$4" \
		-n node.startup -v manual || return 1
	iscsiadm -m node -T "$1" -p "$2" --login
}

# iscsi_login_as IFACE INITIATOR IQN IP:PORT [USER PASSWORD]: log in through an interface record of its own
# whose initiator name is INITIATOR (as the volume target's legs present the target's name, ADR 0040), with
# CHAP when USER is given.
iscsi_login_as() {
	if [[ ! -e /etc/iscsi/ifaces/$1 ]]; then
		iscsiadm -m iface -I "$1" -o new >/dev/null || return 1
		iscsiadm -m iface -I "$1" -o update -n iface.initiatorname -v "$2" >/dev/null || return 1
	fi
	iscsiadm -m node -o new -T "$3" -p "$4" -I "$1" >/dev/null || return 1
	if [[ -n $5 ]]; then
		iscsiadm -m node -T "$3" -p "$4" -I "$1" -o update \
			-n node.session.auth.authmethod -v CHAP \
			-n node.session.auth.username -v "$5" \
			-n node.session.auth.password -v "$6" || return 1
	fi
	iscsiadm -m node -T "$3" -p "$4" -I "$1" --login
}

# iscsi_session IQN [IP:PORT]: the sysfs directory of the session to that target (at that portal: one volume's
# replicas share one IQN, each pool serves it at its own address).
iscsi_session() {
	local s c tn addr port
	for s in /sys/class/iscsi_session/session*; do
		[[ -e $s/targetname ]] || continue
		read -r tn <"$s/targetname"
		[[ $tn == "$1" ]] || continue
		if [[ -n $2 ]]; then
			addr= port=
			for c in "$s"/device/connection*/iscsi_connection/connection*; do
				read -r addr <"$c/persistent_address" && read -r port <"$c/persistent_port"
			done
			[[ $addr:$port == "$2" ]] || continue
		fi
		echo "$s"
		return 0
	done
	return 1
}

# iscsi_disk IQN LUN [SECONDS [IP:PORT]]: the /dev/sdX of that LUN, once it has appeared.
iscsi_disk() {
	local left=$((${3:-20} * 10)) s b
	while ((left-- > 0)); do
		if s=$(iscsi_session "$1" "$4"); then
			for b in "$s"/device/target*/*:*:*:"$2"/block/*; do
				[[ -e $b ]] && { echo "/dev/${b##*/}"; return 0; }
			done
		fi
		gsleep 0.1
	done
	return 1
}

# md_wait_idle MD [SECONDS]: wait until the array neither resyncs nor recovers.
md_wait_idle() {
	local left=$((${2:-60} * 10)) action
	while ((left-- > 0)); do
		read -r action <"/sys/block/$1/md/sync_action"
		[[ $action == idle ]] && return 0
		gsleep 0.1
	done
	return 1
}
