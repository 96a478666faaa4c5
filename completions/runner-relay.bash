_runner__relay() {
    local i cur prev opts cmd
    COMPREPLY=()
    if [[ "${BASH_VERSINFO[0]}" -ge 4 ]]; then
        cur="$2"
    else
        cur="${COMP_WORDS[COMP_CWORD]}"
    fi
    prev="$3"
    cmd=""
    opts=""

    for i in "${COMP_WORDS[@]:0:COMP_CWORD}"
    do
        case "${cmd},${i}" in
            ",$1")
                cmd="runner__relay"
                ;;
            runner__relay,admin)
                cmd="runner__relay__subcmd__admin"
                ;;
            runner__relay,dev)
                cmd="runner__relay__subcmd__dev"
                ;;
            runner__relay,generate-assets)
                cmd="runner__relay__subcmd__generate__subcmd__assets"
                ;;
            runner__relay,help)
                cmd="runner__relay__subcmd__help"
                ;;
            runner__relay,serve)
                cmd="runner__relay__subcmd__serve"
                ;;
            runner__relay__subcmd__admin,add-to-team)
                cmd="runner__relay__subcmd__admin__subcmd__add__subcmd__to__subcmd__team"
                ;;
            runner__relay__subcmd__admin,audit)
                cmd="runner__relay__subcmd__admin__subcmd__audit"
                ;;
            runner__relay__subcmd__admin,create-key)
                cmd="runner__relay__subcmd__admin__subcmd__create__subcmd__key"
                ;;
            runner__relay__subcmd__admin,create-team)
                cmd="runner__relay__subcmd__admin__subcmd__create__subcmd__team"
                ;;
            runner__relay__subcmd__admin,help)
                cmd="runner__relay__subcmd__admin__subcmd__help"
                ;;
            runner__relay__subcmd__admin,list-keys)
                cmd="runner__relay__subcmd__admin__subcmd__list__subcmd__keys"
                ;;
            runner__relay__subcmd__admin,list-members)
                cmd="runner__relay__subcmd__admin__subcmd__list__subcmd__members"
                ;;
            runner__relay__subcmd__admin,remove-from-team)
                cmd="runner__relay__subcmd__admin__subcmd__remove__subcmd__from__subcmd__team"
                ;;
            runner__relay__subcmd__admin,revoke-key)
                cmd="runner__relay__subcmd__admin__subcmd__revoke__subcmd__key"
                ;;
            runner__relay__subcmd__admin__subcmd__audit,help)
                cmd="runner__relay__subcmd__admin__subcmd__audit__subcmd__help"
                ;;
            runner__relay__subcmd__admin__subcmd__audit,verify)
                cmd="runner__relay__subcmd__admin__subcmd__audit__subcmd__verify"
                ;;
            runner__relay__subcmd__admin__subcmd__audit__subcmd__help,help)
                cmd="runner__relay__subcmd__admin__subcmd__audit__subcmd__help__subcmd__help"
                ;;
            runner__relay__subcmd__admin__subcmd__audit__subcmd__help,verify)
                cmd="runner__relay__subcmd__admin__subcmd__audit__subcmd__help__subcmd__verify"
                ;;
            runner__relay__subcmd__admin__subcmd__help,add-to-team)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__add__subcmd__to__subcmd__team"
                ;;
            runner__relay__subcmd__admin__subcmd__help,audit)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__audit"
                ;;
            runner__relay__subcmd__admin__subcmd__help,create-key)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__create__subcmd__key"
                ;;
            runner__relay__subcmd__admin__subcmd__help,create-team)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__create__subcmd__team"
                ;;
            runner__relay__subcmd__admin__subcmd__help,help)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__help"
                ;;
            runner__relay__subcmd__admin__subcmd__help,list-keys)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__list__subcmd__keys"
                ;;
            runner__relay__subcmd__admin__subcmd__help,list-members)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__list__subcmd__members"
                ;;
            runner__relay__subcmd__admin__subcmd__help,remove-from-team)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__remove__subcmd__from__subcmd__team"
                ;;
            runner__relay__subcmd__admin__subcmd__help,revoke-key)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__revoke__subcmd__key"
                ;;
            runner__relay__subcmd__admin__subcmd__help__subcmd__audit,verify)
                cmd="runner__relay__subcmd__admin__subcmd__help__subcmd__audit__subcmd__verify"
                ;;
            runner__relay__subcmd__help,admin)
                cmd="runner__relay__subcmd__help__subcmd__admin"
                ;;
            runner__relay__subcmd__help,dev)
                cmd="runner__relay__subcmd__help__subcmd__dev"
                ;;
            runner__relay__subcmd__help,generate-assets)
                cmd="runner__relay__subcmd__help__subcmd__generate__subcmd__assets"
                ;;
            runner__relay__subcmd__help,help)
                cmd="runner__relay__subcmd__help__subcmd__help"
                ;;
            runner__relay__subcmd__help,serve)
                cmd="runner__relay__subcmd__help__subcmd__serve"
                ;;
            runner__relay__subcmd__help__subcmd__admin,add-to-team)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__add__subcmd__to__subcmd__team"
                ;;
            runner__relay__subcmd__help__subcmd__admin,audit)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__audit"
                ;;
            runner__relay__subcmd__help__subcmd__admin,create-key)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__create__subcmd__key"
                ;;
            runner__relay__subcmd__help__subcmd__admin,create-team)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__create__subcmd__team"
                ;;
            runner__relay__subcmd__help__subcmd__admin,list-keys)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__list__subcmd__keys"
                ;;
            runner__relay__subcmd__help__subcmd__admin,list-members)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__list__subcmd__members"
                ;;
            runner__relay__subcmd__help__subcmd__admin,remove-from-team)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__remove__subcmd__from__subcmd__team"
                ;;
            runner__relay__subcmd__help__subcmd__admin,revoke-key)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__revoke__subcmd__key"
                ;;
            runner__relay__subcmd__help__subcmd__admin__subcmd__audit,verify)
                cmd="runner__relay__subcmd__help__subcmd__admin__subcmd__audit__subcmd__verify"
                ;;
            *)
                ;;
        esac
    done

    case "${cmd}" in
        runner__relay)
            opts="-h -V --log-format --access-log --worker-threads --help --version serve admin dev generate-assets help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 1 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin)
            opts="-h -V --data-dir --database-url --create --log-format --access-log --worker-threads --help --version create-key add-to-team remove-from-team list-keys revoke-key list-members create-team audit help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__add__subcmd__to__subcmd__team)
            opts="-h -V --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__audit)
            opts="-h -V --data-dir --database-url --create --log-format --access-log --worker-threads --help --version verify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__audit__subcmd__help)
            opts="verify help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__audit__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__audit__subcmd__help__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__audit__subcmd__verify)
            opts="-h -V --json --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__create__subcmd__key)
            opts="-h -V --admin --team --name --agent --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --team)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --name)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__create__subcmd__team)
            opts="-h -V --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help)
            opts="create-key add-to-team remove-from-team list-keys revoke-key list-members create-team audit help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__add__subcmd__to__subcmd__team)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__audit)
            opts="verify"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__audit__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__create__subcmd__key)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__create__subcmd__team)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__list__subcmd__keys)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__list__subcmd__members)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__remove__subcmd__from__subcmd__team)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__help__subcmd__revoke__subcmd__key)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__list__subcmd__keys)
            opts="-h -V --json --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__list__subcmd__members)
            opts="-h -V --json --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__remove__subcmd__from__subcmd__team)
            opts="-h -V --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__admin__subcmd__revoke__subcmd__key)
            opts="-y -h -V --yes --data-dir --database-url --create --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__dev)
            opts="-h -V --listen --data-dir --runner-bin --no-sandbox-host --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --runner-bin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__generate__subcmd__assets)
            opts="-h -V --out --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --out)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help)
            opts="serve admin dev generate-assets help"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin)
            opts="create-key add-to-team remove-from-team list-keys revoke-key list-members create-team audit"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__add__subcmd__to__subcmd__team)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__audit)
            opts="verify"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__audit__subcmd__verify)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 5 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__create__subcmd__key)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__create__subcmd__team)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__list__subcmd__keys)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__list__subcmd__members)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__remove__subcmd__from__subcmd__team)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__admin__subcmd__revoke__subcmd__key)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 4 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__dev)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__generate__subcmd__assets)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__help)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__help__subcmd__serve)
            opts=""
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 3 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
        runner__subcmd__relay__subcmd__serve)
            opts="-h -V --listen --data-dir --database-url --nats-url --nats-subject-prefix --instance-id --relay-protocol --drain-grace --heartbeat-interval --stream-keep-alive --output-stall-timeout --session-idle-timeout --approval-ttl --approval-webhook --approval-webhook-secret-file --public-url --max-handshakes --releases-dir --tls-cert --tls-key --no-audit --audit-arguments --audit-retention-days --journal-result-max-kb --journal-max-mb --metrics-addr --metrics-addr-public --metrics-token-file --no-metrics --no-mcp --mcp-max-environments --mcp-allowed-host --mcp-allowed-origin --mcp-no-fast-path --no-console --console-docker-image --log-format --access-log --worker-threads --help --version"
            if [[ ${cur} == -* || ${COMP_CWORD} -eq 2 ]] ; then
                COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
                return 0
            fi
            case "${prev}" in
                --listen)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --data-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --database-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nats-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --nats-subject-prefix)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --instance-id)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --relay-protocol)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --drain-grace)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --heartbeat-interval)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --stream-keep-alive)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --output-stall-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --session-idle-timeout)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approval-ttl)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approval-webhook)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --approval-webhook-secret-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --public-url)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --max-handshakes)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --releases-dir)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-cert)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --tls-key)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --audit-retention-days)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --journal-result-max-kb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --journal-max-mb)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-addr)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --metrics-token-file)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mcp-max-environments)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mcp-allowed-host)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --mcp-allowed-origin)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --console-docker-image)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                --log-format)
                    COMPREPLY=($(compgen -W "text json" -- "${cur}"))
                    return 0
                    ;;
                --worker-threads)
                    COMPREPLY=($(compgen -f "${cur}"))
                    return 0
                    ;;
                *)
                    COMPREPLY=()
                    ;;
            esac
            COMPREPLY=( $(compgen -W "${opts}" -- "${cur}") )
            return 0
            ;;
    esac
}

if [[ "${BASH_VERSINFO[0]}" -eq 4 && "${BASH_VERSINFO[1]}" -ge 4 || "${BASH_VERSINFO[0]}" -gt 4 ]]; then
    complete -F _runner__relay -o nosort -o bashdefault -o default runner-relay
else
    complete -F _runner__relay -o bashdefault -o default runner-relay
fi
