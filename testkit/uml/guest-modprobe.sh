#!/bin/sh
# The guest's /proc/sys/kernel/modprobe (guest-init.sh sets it): the kernel's own module requests find the UML
# modules through the module root the host prepared (scripts/uml-env.sh), whose path guest-init.sh wrote down.
read -r root </run/cstor-modroot
exec /sbin/modprobe -d "$root" "$@"
